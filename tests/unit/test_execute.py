"""The executor against a simulated lvm2 (commands change a model of pvs/lvs): steps run in
order and are journaled; a crash mid-plan resumes without repeating steps; a failing step
stops and rolls back; preflight refuses with sentences. The real thing runs in
tests/lab/test_apply_lab.py."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from advisor.apply.journal import Journal, unfinished_journals
from advisor.apply.preflight import preflight
from advisor.apply.run import ApplyError, Event, apply, rollback
from advisor.apply.state import LiveState, RoleMissing, kernel_name
from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.plan.model import BoundDevice, Plan
from advisor.readers.dmstatus import CacheStatus, StatusError
from advisor.readers.lvm import Lv
from advisor.runner import CommandResult
from recipes.lvmcache import CacheSpec, lvmcache_attach
from tests.conftest import FIXTURES, cli_words

INV = build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))
# modprobe's own words when a module is missing (kmod 30, Debian 12).
MODPROBE_MISSING = "modprobe: FATAL: Module dm_cache not found in directory /lib/modules/6.1.0-56-amd64\n"


class FakeLvm:
    """Runs lvm commands against a model; records every argv."""

    def __init__(self, fail: str | None = None, modprobe_fails: bool = False) -> None:
        self.pvs: dict[str, str] = {os.path.realpath("/dev/sdb"): "labvg"}
        self.lvs: dict[str, dict[str, str]] = {"labvg/data": {"segtype": "linear", "cache_mode": ""}}
        self.ran: list[tuple[str, ...]] = []
        self.fail = fail
        self.modprobe_fails = modprobe_fails
        self.cachevol: tuple[str, dict[str, str]] = ("", {})

    def which(self, tool: str) -> str | None:
        return f"/usr/sbin/{tool}"

    def state(self) -> LiveState:
        lvs = {k: Lv(k.split("/")[0], k.split("/")[1], False, v["segtype"], v["cache_mode"]) for k, v in self.lvs.items()}
        return LiveState(None, dict(self.pvs), lvs, INV)

    def run(self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True) -> CommandResult:
        argv = tuple(argv)
        if argv[0] == "modprobe":
            return CommandResult(argv, 1 if self.modprobe_fails else 0, "", MODPROBE_MISSING if self.modprobe_fails else "", 0.1)
        self.ran.append(argv)
        if self.fail and self.fail in argv:
            return CommandResult(argv, 5, "", f"  {self.fail} failed on purpose\n", 0.1)
        self._apply(argv)
        return CommandResult(argv, 0, "", "", 0.1)

    def start(self, argv: Sequence[str], *, timeout: float | None = None) -> FakeRunning:
        result = self.run(argv)
        return FakeRunning(result)

    def _apply(self, a: tuple[str, ...]) -> None:
        real = os.path.realpath(a[-1])
        if a[0] == "pvcreate":
            self.pvs[real] = ""
        elif a[0] == "pvremove":
            del self.pvs[real]
        elif a[0] == "vgextend":
            self.pvs[real] = a[1]
        elif a[0] == "vgreduce":
            self.pvs[real] = ""
        elif a[0] == "lvcreate":
            size = a.index("-L") if "-L" in a else a.index("-l")
            self.lvs[f"{a[size + 2]}/{a[a.index('-n') + 1]}"] = {"segtype": "raid1" if "raid1" in a else "linear",
                                                               "cache_mode": ""}
        elif a[0] == "lvchange" and "-an" in a:
            pass  # deactivation: nothing the checks look at
        elif a[0] == "lvremove":
            del self.lvs[a[-1]]
        elif a[0] == "lvconvert" and "cache-pool" in a:
            del self.lvs[a[a.index("--poolmetadata") + 1]]
            self.lvs[a[-1]] = {"segtype": "cache-pool", "cache_mode": a[a.index("--cachemode") + 1]}
        elif a[0] == "lvconvert" and "--cachepool" in a:
            pool = self.lvs.pop(a[a.index("--cachepool") + 1])
            self.lvs[a[-1]] = {"segtype": "cache", "cache_mode": pool["cache_mode"]}
        elif a[0] == "lvconvert" and "--cachevol" in a:
            self.cachevol = (a[a.index("--cachevol") + 1], self.lvs.pop(a[a.index("--cachevol") + 1]))
            self.lvs[a[-1]] = {"segtype": "writecache", "cache_mode": ""}
        elif a[0] == "lvconvert" and "--splitcache" in a and self.lvs[a[-1]]["segtype"] == "writecache":
            name, row = self.cachevol
            self.lvs[name] = row
            self.lvs[a[-1]] = {"segtype": "linear", "cache_mode": ""}
        elif a[0] == "lvconvert" and "--uncache" in a:
            self.lvs[a[-1]] = {"segtype": "linear", "cache_mode": ""}


class FakeRunning:
    def __init__(self, result: CommandResult) -> None:
        self.result = result

    def running(self) -> bool:
        return False

    def wait(self, check: bool = True) -> CommandResult:
        return self.result


def plan() -> Plan:
    return lvmcache_attach(INV, "labvg/data", "nvme0n1", CacheSpec(256 << 20, mode="writeback"))


def quiet(_e: Event) -> None:
    pass


def test_apply_runs_every_step_once_and_journals_it(tmp_path: Path) -> None:
    lvm, p = FakeLvm(), plan()
    journal = apply(p, lvm, tmp_path, quiet, read_state=lvm.state)  # type: ignore[arg-type]
    assert [a[0] for a in lvm.ran] == ["pvcreate", "vgextend", "lvcreate", "lvcreate", "lvconvert", "lvconvert"]
    assert lvm.lvs["labvg/data"] == {"segtype": "cache", "cache_mode": "writeback"}
    events = [r["event"] for r in journal.records()]
    assert events[0] == "plan" and events[-1] == "done" and events.count("step-end") == 6
    assert len((tmp_path / "audit.log").read_text().splitlines()) == 6
    assert unfinished_journals(tmp_path) == []


@pytest.mark.parametrize("killed_after", range(1, 7))
def test_a_crash_after_any_step_resumes_without_repeating_steps(tmp_path: Path, killed_after: int) -> None:
    lvm, p = FakeLvm(), plan()

    def crash(e: Event) -> None:
        if e.kind == "ok" and e.step.id == p.steps[killed_after - 1].id:
            raise KeyboardInterrupt  # the process dies here (SIGKILL in the lab test)

    with pytest.raises(KeyboardInterrupt):
        apply(p, lvm, tmp_path, crash, read_state=lvm.state)  # type: ignore[arg-type]
    pending = unfinished_journals(tmp_path)
    assert len(pending) == 1 and pending[0].plan == p
    apply(pending[0].plan, lvm, tmp_path, quiet, journal=pending[0], read_state=lvm.state)  # type: ignore[arg-type]
    assert len(lvm.ran) == 6, "no command ran twice"
    assert lvm.lvs["labvg/data"]["segtype"] == "cache"
    assert unfinished_journals(tmp_path) == []


def test_a_failing_step_stops_says_where_and_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("advisor.apply.run.FAILURE_PATIENCE", 0.0)
    lvm, p = FakeLvm(fail="data_cache_meta"), plan()
    with pytest.raises(ApplyError) as err:
        apply(p, lvm, tmp_path, quiet, read_state=lvm.state)  # type: ignore[arg-type]
    message = cli_words(err.value)
    assert "failed with exit code 5" in message and "half applied" in message and "--rollback" in message
    assert "steps done: pvcreate, vgextend, lvcreate-data" in message
    journal = unfinished_journals(tmp_path)[0]
    rollback(journal, lvm, tmp_path, quiet, read_state=lvm.state)  # type: ignore[arg-type]
    assert lvm.ran[-3:] == [("lvremove", "--yes", "labvg/data_cache"),
                            ("vgreduce", "labvg", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"),
                            ("pvremove", "--yes", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001")]
    assert set(lvm.lvs) == {"labvg/data"} and os.path.realpath("/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001") not in lvm.pvs
    assert Journal(journal.path).finished


def test_preflight_names_a_kernel_module_that_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr("advisor.apply.preflight.Path.exists", lambda self: False if "/sys/module/" in str(self) else True)
    lvm = FakeLvm(modprobe_fails=True)
    problems = [p.sentence() for p in preflight(plan(), lvm, lvm.state())]  # type: ignore[arg-type]
    assert any("kernel module dm_cache cannot be loaded" in p and "not found in directory" in p for p in problems)


def test_preflight_refuses_without_root_and_with_a_changed_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    lvm = FakeLvm()
    data = plan().to_json()
    data["devices"][1]["size_bytes"] += 512
    problems = [p.sentence() for p in preflight(Plan.from_json(data), lvm, lvm.state())]  # type: ignore[arg-type]
    assert any("needs root" in p for p in problems)
    assert any("changed size" in p for p in problems)


def cache_dirty_from_status(text: str) -> int | None:
    """The dirty-block count the reader finds in a dm-cache status line."""
    try:
        return CacheStatus.parse(text).dirty
    except StatusError:
        return None


def test_dirty_blocks_read_from_a_real_dm_cache_status_line() -> None:
    line = (FIXTURES / "lab-recommend" / "dmsetup-status-cache.txt").read_text()
    assert cache_dirty_from_status(line) == int(line.split()[line.split().index("cache") + 11])
    assert cache_dirty_from_status("0 2048 linear") is None
    fields = line.split()
    fields[fields.index("cache") + 11] = "4242"
    assert cache_dirty_from_status(" ".join(fields)) == 4242


def test_a_signal_during_a_step_lets_it_finish_then_stops_journaled(tmp_path: Path) -> None:
    import signal

    lvm, p = FakeLvm(), plan()
    real_run = lvm.run

    def run_then_signal(argv: Sequence[str], *, timeout: float | None = None, check: bool = True) -> CommandResult:
        result = real_run(argv, timeout=timeout, check=check)
        if argv[0] == "lvcreate" and "data_cache" in argv:  # step 3 ends with SIGTERM pending
            os.kill(os.getpid(), signal.SIGTERM)
        return result

    lvm.run = run_then_signal  # type: ignore[method-assign]
    with pytest.raises(ApplyError, match="received SIGTERM and stopped between steps") as err:
        apply(p, lvm, tmp_path, quiet, read_state=lvm.state)  # type: ignore[arg-type]
    assert "steps done: pvcreate, vgextend, lvcreate-data" in str(err.value)
    journal = unfinished_journals(tmp_path)[0]
    events = [r["event"] for r in journal.records()]
    assert events[-1] == "interrupted" and events.count("step-end") == 3
    assert signal.getsignal(signal.SIGTERM) is not None  # the previous handler is back
    apply(journal.plan, lvm, tmp_path, quiet, journal=journal, read_state=lvm.state)  # type: ignore[arg-type]
    assert lvm.lvs["labvg/data"]["segtype"] == "cache" and len(lvm.ran) == 6


def test_two_applies_cannot_interleave(tmp_path: Path) -> None:
    from advisor.apply.journal import Busy, locked

    with locked(tmp_path), pytest.raises(Busy, match="another cachewise is applying a plan"):
        with locked(tmp_path):
            pass
    with locked(tmp_path):  # released again
        pass


def test_damaged_journals_are_listed_and_abandon_clears_them(tmp_path: Path) -> None:
    from advisor.apply.journal import abandon, journal_dir

    d = journal_dir(tmp_path)
    d.mkdir(parents=True)
    (d / "a.jsonl").write_bytes(b"\xff\xfe not text")
    (d / "b.jsonl").mkdir()
    (d / "c.jsonl").write_text('{"event": "plan", "plan": {"schema": "cachewise.plan/1"}}\n')
    pending = unfinished_journals(tmp_path)
    assert [j.path.name for j in pending] == ["a.jsonl", "b.jsonl", "c.jsonl"]
    problems = [j.problem() for j in pending]
    assert "cannot be read" in problems[0] and "cannot be read" in problems[1]  # type: ignore[operator]
    assert "holds a plan that is refused" in problems[2]  # type: ignore[operator]
    for j in pending:
        abandon(j)
    assert unfinished_journals(tmp_path) == []
    assert (d / "b.jsonl.abandoned").is_dir()


def test_a_full_disk_stops_the_plan_with_a_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.apply.journal import JournalError

    lvm, p = FakeLvm(), plan()
    real_write = Journal.write

    def write(self: Journal, event: str, **fields: object) -> None:
        if event == "step-end" and fields.get("step") == "vgextend":
            raise JournalError(self.path, "cannot be written (No space left on device)")
        real_write(self, event, **fields)

    monkeypatch.setattr(Journal, "write", write)
    with pytest.raises(ApplyError, match=r"cannot be written \(No space left on device\).*steps done: pvcreate\)"):
        apply(p, lvm, tmp_path, quiet, read_state=lvm.state)  # type: ignore[arg-type]


def test_journal_writes_that_fail_are_journal_errors(tmp_path: Path) -> None:
    from advisor.apply.journal import JournalError

    (tmp_path / "j.jsonl").mkdir()
    with pytest.raises(JournalError, match="cannot be written"):
        Journal(tmp_path / "j.jsonl").write("plan")


def writecache_plan() -> Plan:
    from recipes.writecache import WritecacheSpec, writecache_attach

    return writecache_attach(INV, "labvg/data", ["nvme0n1", "sda"], WritecacheSpec(64 << 20))


@pytest.mark.parametrize("killed_after", range(1, 8))
def test_a_mirrored_writecache_attach_resumes_after_a_crash_at_any_step(tmp_path: Path, killed_after: int) -> None:
    lvm, p = FakeLvm(), writecache_plan()
    assert len(p.steps) == 7

    def crash(e: Event) -> None:
        if e.kind == "ok" and e.step.id == p.steps[killed_after - 1].id:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        apply(p, lvm, tmp_path, crash, read_state=lvm.state)  # type: ignore[arg-type]
    pending = unfinished_journals(tmp_path)
    apply(pending[0].plan, lvm, tmp_path, quiet, journal=pending[0], read_state=lvm.state)  # type: ignore[arg-type]
    # Deactivation has nothing to check afterwards, so a crash right after it runs it again (harmless).
    assert len(lvm.ran) == 7 + (killed_after == 6)
    assert lvm.lvs["labvg/data"]["segtype"] == "writecache"
    assert ("lvcreate", "--yes", "--wipesignatures", "y", "--type", "raid1", "-m", "1", "-n", "data_wcache", "-L",
            "65536k", "labvg", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001",
            "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4") in lvm.ran


def test_a_writecache_attach_rolls_back_to_where_it_started(tmp_path: Path) -> None:
    lvm, p = FakeLvm(), writecache_plan()

    def crash(e: Event) -> None:
        if e.kind == "ok" and e.step.id == "attach":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        apply(p, lvm, tmp_path, crash, read_state=lvm.state)  # type: ignore[arg-type]
    rollback(unfinished_journals(tmp_path)[0], lvm, tmp_path, quiet, read_state=lvm.state)  # type: ignore[arg-type]
    undone = lvm.ran[7:]
    assert undone[0] == ("lvconvert", "--yes", "--splitcache", "labvg/data"), "the writecache is flushed off first"
    assert undone[1] == ("lvremove", "--yes", "labvg/data_wcache")
    assert set(lvm.lvs) == {"labvg/data"} and lvm.lvs["labvg/data"]["segtype"] == "linear"
    assert set(lvm.pvs) == {os.path.realpath("/dev/sdb")}


class ReportsRunner:
    """Answers lvm2's reports with the lab's captured output (tests/fixtures/lab-scan); records them."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def which(self, tool: str) -> str | None:
        return f"/usr/sbin/{tool}"

    def run(self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True) -> CommandResult:
        self.ran.append(argv[0])
        captured = {"pvs": "pvs.json", "lvs": "lvs.json"}[argv[0]]
        return CommandResult(tuple(argv), 0, (FIXTURES / "lab-scan" / captured).read_text(), "", 0.1)


def test_the_live_state_runs_each_lvm_report_only_when_a_check_reads_it() -> None:
    runner = ReportsRunner()
    state = LiveState.read(runner)  # type: ignore[arg-type]
    assert runner.ran == []  # a bcache plan's checks (sysfs) never run lvm2 at all
    assert state.read_sysfs("/sys/nonexistent/bcache/state") is None
    assert runner.ran == []
    data = state.lv("labvg/data")
    assert data is not None and data.segtype == "linear"
    assert runner.ran == ["lvs"]
    assert state.pv_vg("/dev/nonexistent") is None and state.lv("labvg/none") is None
    assert "labvg" in state.names() and "labvg/data" in state.names()
    assert runner.ran == ["lvs", "pvs"]  # each once per state, however many checks read it
    again = LiveState.read(runner)  # type: ignore[arg-type]
    assert again.lv("labvg/data") is not None and runner.ran == ["lvs", "pvs", "lvs"]


def _a_block_device() -> str | None:
    """The name of a block device this machine has a node for (the host's loop devices)."""
    for name in sorted(os.listdir("/sys/class/block")):
        with contextlib.suppress(OSError):
            if stat.S_ISBLK(os.stat(f"/dev/{name}").st_mode):
                return name
    return None


def test_a_roles_sysfs_folder_is_found_from_its_node_without_a_discovery(tmp_path: Path) -> None:
    name = _a_block_device()
    if name is None:
        pytest.skip("no block device node on this machine")
    link = tmp_path / "wwn-0x5000c500a1b2c3d4"  # as /dev/disk/by-id/ links to the kernel's node
    link.symlink_to(f"/dev/{name}")
    assert kernel_name(str(link)) == name
    assert kernel_name(str(tmp_path)) is None and kernel_name(str(tmp_path / "gone")) is None
    backing = BoundDevice("backing", str(link), f"/dev/{name}", None, None, None, 1 << 30)
    plan = Plan("bcache-create", "t", (backing,), ())
    runner = ReportsRunner()
    state = LiveState.read(runner, plan)  # type: ignore[arg-type]
    assert state.resolve("{backing}/bcache/state") == f"/sys/class/block/{name}/bcache/state"
    assert state._inv is None and runner.ran == []  # no blkid, no lvm2, no walk of every disk
    # A node that is not there (no udev, so no by-id link) is looked up in the inventory by identity.
    missing = dataclasses.replace(plan, devices=(dataclasses.replace(backing, path=str(tmp_path / "gone")),))
    by_hand = LiveState(None, _inv=INV, plan=missing)
    with pytest.raises(RoleMissing):
        by_hand.resolve("{backing}/bcache/state")


def test_a_commands_effect_that_shows_a_moment_later_is_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """udev probes a device again after the command that wrote it exits: the first look after
    pvcreate may still show no PV. The run looks again rather than stopping a plan that worked."""
    monkeypatch.setattr("advisor.apply.run.POLL", 0.01)

    def late_udev(lvm: FakeLvm) -> Callable[[], LiveState]:
        looks: Counter[int] = Counter()  # looks after each number of commands run

        def read() -> LiveState:
            looks[len(lvm.ran)] += 1
            state = lvm.state()
            if lvm.ran and lvm.ran[-1][0] == "pvcreate" and looks[len(lvm.ran)] == 1:
                state.pvs.pop(os.path.realpath(lvm.ran[-1][-1]))  # not probed yet
            return state

        return read

    lvm = FakeLvm()
    journal = apply(plan(), lvm, tmp_path, quiet, read_state=late_udev(lvm))  # type: ignore[arg-type]
    assert [r["event"] for r in journal.records()][-1] == "done"
    assert [a[0] for a in lvm.ran].count("pvcreate") == 1
    monkeypatch.setattr("advisor.apply.run.SETTLE_PATIENCE", 0.0)  # one look only: the plan stops there
    lvm = FakeLvm()
    with pytest.raises(ApplyError, match="did not take effect"):
        apply(plan(), lvm, tmp_path / "once", quiet, read_state=late_udev(lvm))  # type: ignore[arg-type]
    assert [a[0] for a in lvm.ran] == ["pvcreate"]
