"""bcache's tunables that the kernel forgets at every boot (sequential_cutoff, writeback_percent),
kept in /etc/cachewise/bcache/<UUID>.conf and set again by the package's udev rule: the file
written and read back strictly, hostile files refused with one sentence, the plan steps that
write and remove it (preview, JSON, the plan language, the journal, resume and roll back),
drift against the lab's bcache sysfs files (tests/unit/fakesys.py), and `cachewise tunables`,
`scan` and `status` with --json. The reboot that proves it is the lab's."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from advisor import tunables
from advisor.apply.run import Event, apply, rollback
from advisor.apply.state import LiveState
from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.health import tunables as health
from advisor.plan.checks import CheckError, from_json
from advisor.plan.language import TUNABLES_FILE
from advisor.plan.model import Plan, PlanError, Step
from advisor.readers.bcache import hprint, hprint_bytes
from advisor.tunables import TunablesError
from cachewise.cli import build_parser, main
from cachewise.render import plan_preview
from recipes.bcache import bcache_create, bcache_detach
from tests.conftest import FIXTURES, LAB_SCAN, cli_words
from tests.unit.fakesys import make_sys

REPO = Path(__file__).resolve().parents[2]
INV = build_inventory(RawSystem.load(LAB_SCAN / "raw-udev.json"))
# The lab's writeback bcache (tests/fixtures/lab-readers/bcache-sysfs-writeback.json): sdd under
# bcache0, sequential_cutoff 4.0M, writeback_percent 10.
UUID = json.loads((FIXTURES / "lab-readers" / "bcache-sysfs-writeback.json").read_text())["backing_dev_uuid"]
OTHER = "11111111-2222-4333-8444-555555555555"
KEPT = "sequential_cutoff=8388608 writeback_percent=20"


@pytest.fixture
def etc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder of the tunables files, in place of /etc/cachewise/bcache (not made yet)."""
    folder = tmp_path / "etc" / "cachewise" / "bcache"
    monkeypatch.setattr(tunables, "CONFIG_DIR", folder)
    return folder


@pytest.fixture
def sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The lab's bcache in a sysfs tree, with bcache0's link to its backing device's directory
    as the kernel makes it (drivers/md/bcache/super.c, bch_cached_dev_run)."""
    root = make_sys(tmp_path)
    block = root / "devices" / "virtual" / "block"
    os.symlink(block / "sdd" / "bcache", block / "bcache0" / "bcache")
    monkeypatch.setattr(tunables, "SYS", root)
    return root


def backing_dir(sysfs: Path) -> Path:
    return sysfs / "devices" / "virtual" / "block" / "sdd" / "bcache"


def _other_users(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``path`` another user's: chown as root, else no longer count the test's user as trusted."""
    if os.geteuid() == 0:
        os.lchown(path, 65534, 65534)
    else:
        monkeypatch.setattr(tunables, "trusted_owners", lambda: (0,))


# --- the file ---


def test_the_file_round_trips_root_s_0644_with_its_header(etc: Path) -> None:
    old = os.umask(0o077)  # a root with a strict umask still writes a file everyone may read
    try:
        path = tunables.write(UUID, {"writeback_percent": 20, "sequential_cutoff": 8 << 20})
    finally:
        os.umask(old)
    assert path == etc / f"{UUID}.conf"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and stat.S_IMODE(etc.stat().st_mode) == 0o755
    text = path.read_text()
    assert text.startswith("# cachewise") and text.endswith("sequential_cutoff=8388608\nwriteback_percent=20\n")
    conf = tunables.read(UUID)
    assert conf is not None and conf.values == {"sequential_cutoff": 8 << 20, "writeback_percent": 20}
    assert conf.settings == KEPT and tunables.parse_settings(conf.settings) == conf.values
    # Written again, it replaces its own file whole; a file cachewise did not write is not replaced.
    tunables.write(UUID, {"sequential_cutoff": 0, "writeback_percent": 0})
    assert tunables.read(UUID).values == {"sequential_cutoff": 0, "writeback_percent": 0}  # type: ignore[union-attr]
    (etc / f"{OTHER}.conf").write_text("sequential_cutoff=0\n")
    with pytest.raises(TunablesError, match="was not written by cachewise"):
        tunables.write(OTHER, {"sequential_cutoff": 1})
    assert tunables.remove(UUID) and not tunables.remove(UUID) and tunables.read(UUID) is None
    assert not list(etc.glob(".*.tmp")), "no temporary file left behind"


def test_no_folder_or_no_file_is_nothing_configured(etc: Path) -> None:
    assert tunables.read(UUID) is None and tunables.configured() == ([], [])
    etc.mkdir(parents=True)
    (etc / "README").write_text("not a device's file\n")
    (etc / f"{UUID}.conf~").write_text("an editor's backup\n")
    assert tunables.configured() == ([], [])


HOSTILE = [
    ("sequential_cutoff=4194304\nrm -rf /\n", "line 2 is not a setting cachewise keeps"),
    ("cache_mode=writeback\n", "line 1 is not a setting cachewise keeps"),
    ("sequential_cutoff=abc\n", "line 1 sets sequential_cutoff to 'abc', not a whole number from 0 to 4294967295"),
    ("writeback_percent=41\n", "line 1 sets writeback_percent to '41', not a whole number from 0 to 40"),
    ("writeback_percent=-1\n", "not a whole number from 0 to 40"),
    ("sequential_cutoff=4294967296\n", "not a whole number from 0 to 4294967295"),
    ("writeback_percent=010\n", "not a whole number"),
    ("writeback_percent=10\nwriteback_percent=20\n", "line 2 sets writeback_percent a second time"),
    ("writeback_percent=10\x1b[2J\n", "holds a control character on line 1"),
    ("writeback_percent=10\r\n", "holds a control character on line 1"),
    ("# caf\u00e9\nwriteback_percent=10\n", "is not plain ASCII text"),
    ("\x00" * 16, "holds a control character on line 1"),
    ("# " + "x" * 5000 + "\n", "is larger than 4096 bytes"),
]


@pytest.mark.parametrize(("content", "why"), HOSTILE)
def test_hostile_content_is_refused_in_one_sentence(etc: Path, content: str, why: str) -> None:
    etc.mkdir(parents=True)
    (etc / f"{UUID}.conf").write_bytes(content.encode())
    with pytest.raises(TunablesError) as err:
        tunables.read(UUID)
    said = cli_words(err.value)
    assert why in said and said.endswith("so cachewise does not use it. Nothing was changed."), said
    assert "\x1b" not in said and "\x00" not in said and "\n" not in said


def test_a_file_someone_else_can_write_or_owns_is_refused(etc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tunables.write(UUID, {"writeback_percent": 10})
    os.chmod(path, 0o666)
    with pytest.raises(TunablesError, match="can be written by other users, so cachewise does not use it"):
        tunables.read(UUID)
    os.chmod(path, 0o644)
    os.chmod(etc, 0o777)
    with pytest.raises(TunablesError, match=f"{re.escape(str(etc))} can be written by other users"):
        tunables.read(UUID)
    os.chmod(etc, 0o755)
    _other_users(path, monkeypatch)
    with pytest.raises(TunablesError, match="belongs to (nobody|uid 65534|.+), so cachewise does not use it"):
        tunables.read(UUID)


def test_a_link_a_fifo_or_a_folder_in_its_place_is_refused_without_blocking(etc: Path, tmp_path: Path) -> None:
    good = tmp_path / "elsewhere.conf"
    good.write_text("writeback_percent=10\n")
    etc.mkdir(parents=True)
    os.symlink(good, etc / f"{UUID}.conf")
    with pytest.raises(TunablesError, match="is a link, so cachewise does not use it"):
        tunables.read(UUID)
    os.unlink(etc / f"{UUID}.conf")
    os.mkfifo(etc / f"{UUID}.conf")  # a reader would block on it: refused before a byte is read
    with pytest.raises(TunablesError, match="is not a regular file"):
        tunables.read(UUID)
    os.unlink(etc / f"{UUID}.conf")
    (etc / f"{UUID}.conf").mkdir()
    with pytest.raises(TunablesError, match="is not a regular file"):
        tunables.read(UUID)


def test_every_file_is_listed_and_the_refused_ones_are_said(etc: Path) -> None:
    tunables.write(UUID, {"sequential_cutoff": 8 << 20})
    (etc / f"{OTHER}.conf").write_text("bogus\n")
    found, refused = tunables.configured()
    assert [c.uuid for c in found] == [UUID]
    assert len(refused) == 1 and "line 1 is not a setting cachewise keeps" in cli_words(refused[0])


def test_the_kernel_s_rendering_of_sizes_is_bch_hprint() -> None:
    """sysfs shows sequential_cutoff through bch_hprint (drivers/md/bcache/util.c): one digit
    after the point, so a value is compared in that form."""
    assert [hprint(v) for v in (0, 512, 4 << 20, 8 << 20, 5_000_000, 1023)] == [
        "0.0k", "0.5k", "4.0M", "8.0M", "4.7M", "0.9k"]
    assert hprint_bytes(hprint(4 << 20)) == 4 << 20
    assert tunables.same("sequential_cutoff", "4.7M", 5_000_000) and not tunables.same("sequential_cutoff", "4.0M", 8 << 20)
    assert tunables.same("writeback_percent", "10", 10) and not tunables.same("writeback_percent", "10", 0)


# --- the devices ---


@pytest.mark.parametrize("name", ["bcache0", "/dev/bcache0", "sdd"])
def test_a_device_is_found_by_bcacheN_or_its_backing_device(sysfs: Path, name: str) -> None:
    b = tunables.find(name)
    assert (b.name, b.device, b.uuid) == ("sdd", "bcache0", UUID)
    assert b.live == {"sequential_cutoff": "4.0M", "writeback_percent": "10"}
    assert [x.uuid for x in tunables.backings()] == [UUID], "bcache0/bcache and sdd/bcache are one device"


@pytest.mark.parametrize("name", ["sde", "nvme9n9", "../../etc", "bcache0\n"])
def test_what_is_not_a_backing_device_is_said(sysfs: Path, name: str) -> None:
    with pytest.raises(TunablesError) as err:
        tunables.find(name)
    assert "is not a bcache device or a bcache backing device on this machine" in cli_words(err.value)


def test_udev_s_device_is_waited_for_until_the_kernel_links_it(sysfs: Path) -> None:
    """On the uevent udev acts on, the kernel has not made bcacheN's link to its backing device yet."""
    link = sysfs / "devices" / "virtual" / "block" / "bcache0" / "bcache"
    os.unlink(link)
    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 3:
            os.symlink(backing_dir(sysfs), link)

    assert tunables.find("bcache0", wait=5, sleep=sleep).uuid == UUID and len(naps) == 3
    os.unlink(link)
    now = [0.0]

    def later(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(TunablesError) as err:
        tunables.find("bcache0", wait=2, sleep=later, clock=lambda: now[0])
    assert "did not show its backing device's bcache directory within 2 s" in cli_words(err.value)
    assert 2 <= now[0] < 2.5


def test_apply_sets_each_value_and_says_what_changed(sysfs: Path, etc: Path) -> None:
    tunables.write(UUID, tunables.parse_settings(KEPT))
    done = tunables.apply(tunables.find("bcache0"))
    assert done.configured is not None and not done.failed and tunables.not_set(done) is None
    assert [(c.key, c.before, c.after, c.changed) for c in done.changes] == [
        ("sequential_cutoff", "4.0M", "8388608", True), ("writeback_percent", "10", "20", True)]
    assert (backing_dir(sysfs) / "writeback_percent").read_text() == "20"
    # A device without a file is left as it is.
    tunables.remove(UUID)
    assert tunables.apply(tunables.find("bcache0")).changes == ()


def test_a_value_the_kernel_refuses_is_an_error_naming_it(sysfs: Path, etc: Path) -> None:
    tunables.write(UUID, {"writeback_percent": 20})
    (backing_dir(sysfs) / "writeback_percent").unlink()
    (backing_dir(sysfs) / "writeback_percent").mkdir()  # open() fails as the kernel's EINVAL would
    done = tunables.apply(tunables.find("sdd"))
    error = tunables.not_set(done)
    assert error is not None and done.failed
    assert re.search(r"bcache did not take writeback_percent=20 from \S+\.conf \(Is a directory\)", cli_words(error))


# --- drift ---


def test_drift_names_the_value_the_file_and_the_fix(sysfs: Path, etc: Path) -> None:
    assert health.drift() == []
    tunables.write(UUID, {"sequential_cutoff": 4 << 20, "writeback_percent": 10})
    assert health.drift() == [], "the live values are the configured ones"
    tunables.write(UUID, {"sequential_cutoff": 8 << 20, "writeback_percent": 10})
    (found,) = health.drift()
    assert (found.code, found.severity, found.subject) == ("tunable-drifted", "warning", "bcache0")
    assert found.what == f"bcache0: sequential_cutoff is 4.0M, configured 8.0M in {etc}/{UUID}.conf"
    assert found.fix is not None and found.fix.command == ("cachewise", "tunables", "apply", "--device", "/dev/bcache0")
    data = found.to_json()
    assert data["facts"]["configured_value"] == 8 << 20 and data["facts"]["uuid"] == UUID
    json.dumps(data)  # a doctor --json can print it


def test_a_refused_file_and_a_file_of_an_absent_device_are_findings(sysfs: Path, etc: Path) -> None:
    tunables.write(OTHER, {"writeback_percent": 0})
    (etc / f"{UUID}.conf").write_text("writeback_percent=99\n")
    found = {f.code: f for f in health.drift()}
    assert set(found) == {"tunables-orphaned", "tunables-file-refused"}
    assert found["tunables-orphaned"].severity == "info" and OTHER in found["tunables-orphaned"].what
    refused = found["tunables-file-refused"]
    assert refused.severity == "warning"
    assert "line 1 sets writeback_percent to '99'" in refused.what and "not set at boot" in refused.what
    os.chmod(etc, 0o777)  # a folder anyone can write to: nothing in it is used
    (folder,) = health.drift()
    assert folder.code == "tunables-file-refused" and "can be written by other users" in folder.what


def test_a_file_that_cannot_be_read_is_a_note_without_root_and_a_warning_as_root() -> None:
    """Without root, a file of root's that others may not read is as it should be: its values were
    not compared (a note), not "refused, so not set at boot". As root the udev rule fails too."""
    path = Path(f"/etc/cachewise/bcache/{UUID}.conf")
    unreadable = TunablesError("tunables-unreadable", path=path, why="Permission denied")
    (user,) = health.compare([], [], [unreadable], root=False)
    assert (user.code, user.severity) == ("tunables-file-unread", "info")
    assert "Permission denied" in user.what and "not compared" in user.what and "not set at boot" not in user.what
    assert user.fix is not None and "as root" in user.fix.how
    (admin,) = health.compare([], [], [unreadable], root=True)
    assert (admin.code, admin.severity) == ("tunables-file-unread", "warning")
    refused = TunablesError("tunables-refused", path=path, why="is a link")
    (still,) = health.compare([], [], [refused], root=False)
    assert (still.code, still.severity) == ("tunables-file-refused", "warning")


# --- the plans ---


def preview(plan: Plan) -> str:
    console = Console(width=400, record=True)
    console.print(plan_preview(plan))
    return console.export_text()


def test_bcache_create_writes_the_file_last_and_the_preview_shows_it() -> None:
    plan = bcache_create(INV, "sda", "nvme0n1", mode="writeback", sequential_cutoff=8 << 20, writeback_percent=20)
    step = plan.steps[-1]
    assert step.id == "tunables-file" and step.write == (TUNABLES_FILE, KEPT) and not step.destructive
    assert step.command == f"printf '%s\\n' {KEPT} > {TUNABLES_FILE}"
    assert step.undo == () and step.undo_commands == (f"rm -f {TUNABLES_FILE}",)
    text = preview(plan)
    assert f"record {KEPT} in {TUNABLES_FILE}, which cachewise's udev rule sets again" in text
    assert f"printf '%s\\n' {KEPT} > {TUNABLES_FILE}" in text and f"undo: rm -f {TUNABLES_FILE}" in text
    assert "{backing-uuid} is the backing device's bcache UUID" in text
    assert "Destroys\n  nothing" in text, "the file destroys nothing: Destroys is computed from the commands"
    data = json.loads(plan.dumps())
    assert data["steps"][-1]["write"] == [TUNABLES_FILE, KEPT]
    assert data["steps"][-1]["post"] == [{"kind": "tunables_file", "args": {"file": TUNABLES_FILE, "value": KEPT}}]
    assert Plan.loads(plan.dumps()) == plan


def test_bcache_detach_removes_the_file_before_anything_else() -> None:
    plan = bcache_detach(INV, "/dev/bcache/by-uuid/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08")
    first = plan.steps[0]
    assert first.write == (TUNABLES_FILE, "") and first.command == f"rm -f {TUNABLES_FILE}"
    assert first.post[0].to_json() == {"kind": "no_tunables_file", "args": {"file": TUNABLES_FILE}}
    text = preview(plan)
    assert "/etc/cachewise/bcache/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08.conf: removed" in text
    assert Plan.loads(plan.dumps()) == plan


def _edited(plan: Plan, change: Any) -> str:
    data = json.loads(plan.dumps())
    change(data)
    return json.dumps(data)


def _last(data: dict[str, Any]) -> dict[str, Any]:
    step: dict[str, Any] = data["steps"][-1]
    return step


@pytest.mark.parametrize(("change", "why"), [
    (lambda d: _last(d).update(write=[TUNABLES_FILE, "sequential_cutoff=1 writeback_percent=99"]),
     "takes no such value"),
    (lambda d: _last(d).update(write=[TUNABLES_FILE, "sequential_cutoff=1\nwriteback_percent=1"]),
     "control characters"),
    (lambda d: _last(d).update(write=["/etc/cachewise/bcache/../../shadow", "sequential_cutoff=1 writeback_percent=1"]),
     "which is not one of the bcache files plans write"),
    (lambda d: _last(d).update(write=["/etc/cachewise/bcache/{backing}.conf", "sequential_cutoff=1 writeback_percent=1"]),
     "which is not one of the bcache files plans write"),
    (lambda d: _last(d).update(post=[]), "its postconditions are not the ones its command implies"),
    (lambda d: _last(d).update(write=[TUNABLES_FILE, "sequential_cutoff=9999999999 writeback_percent=1"],
                               post=[{"kind": "tunables_file", "args": {"file": TUNABLES_FILE,
                                      "value": "sequential_cutoff=9999999999 writeback_percent=1"}}]),
     "more than the kernel keeps (4294967295)"),
    (lambda d: _last(d).update(undo=[["rm", "-f", "/etc/passwd"]]), "rm is not a program cachewise plans run"),
    (lambda d: _last(d).update(write=[TUNABLES_FILE, ""], post=[{"kind": "no_tunables_file",
                                                                 "args": {"file": TUNABLES_FILE}}]),
     "takes no such value in a bcache-create plan"),
])
def test_the_plan_language_holds_the_file_step_to_what_the_recipe_writes(change: Any, why: str) -> None:
    plan = bcache_create(INV, "sda", "nvme0n1", sequential_cutoff=1, writeback_percent=1)
    with pytest.raises(PlanError) as err:
        Plan.loads(_edited(plan, change))
    assert why in cli_words(err.value), cli_words(err.value)


def test_a_check_on_any_other_file_is_refused() -> None:
    with pytest.raises(CheckError, match="plans only look at /etc/cachewise/bcache/"):
        from_json({"kind": "tunables_file", "args": {"file": "/etc/shadow", "value": "x"}})
    with pytest.raises(CheckError, match="plans only look at"):
        from_json({"kind": "no_tunables_file", "args": {"file": "/etc/cachewise/bcache/x.conf"}})


# --- running the steps: journal, resume, roll back ---


class FakeState(LiveState):
    """The live state of a registered backing device: its UUID in sysfs; nothing from LVM."""

    def read_sysfs(self, path: str) -> str | None:
        return UUID if path == "{backing}/bcache/backing_dev_uuid" else None


def quiet(_e: Event) -> None:
    pass


def _only(plan: Plan, step: Step) -> Plan:
    """The plan with this one step (the sysfs steps before it need a real kernel: the lab's)."""
    return Plan(plan.kind, plan.title, plan.devices, (step,))


def test_the_file_step_is_journaled_resumed_and_rolled_back(etc: Path, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    plan = bcache_create(INV, "sda", "nvme0n1", sequential_cutoff=8 << 20, writeback_percent=20)
    one = _only(plan, plan.steps[-1])
    journal = apply(one, None, state_dir, quiet, read_state=FakeState)  # type: ignore[arg-type]
    path = etc / f"{UUID}.conf"
    assert tunables.read(UUID).settings == KEPT  # type: ignore[union-attr]
    end = next(r for r in journal.records() if r["event"] == "step-end")
    assert end == {**end, "step": "tunables-file", "returncode": 0, "file": str(path)}
    audit = (state_dir / "audit.log").read_text()
    assert f"printf '%s\\n' {KEPT} > {path}" in audit, "the audit log names the file by its real name"
    # Applied again (a resume), the step is in effect and skipped.
    events: list[Event] = []
    apply(one, None, state_dir, events.append, read_state=FakeState)  # type: ignore[arg-type]
    assert [e.kind for e in events] == ["skip"]
    # Rolled back: the file goes.
    undone: list[Event] = []
    rollback(journal, None, state_dir, undone.append, read_state=FakeState)  # type: ignore[arg-type]
    assert not path.exists()
    assert [e.message for e in undone if e.kind == "undo"] == [f"rm -f {TUNABLES_FILE}"]
    record = next(r for r in journal.records() if r["event"] == "undo-end")
    assert record["write"] == [TUNABLES_FILE, ""] and record["returncode"] == 0 and record["file"] == str(path)


def test_the_detach_removes_the_file_and_even_a_refused_one(etc: Path, tmp_path: Path) -> None:
    plan = bcache_detach(INV, "/dev/bcache/by-uuid/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08")
    one = _only(plan, plan.steps[0])
    etc.mkdir(parents=True)
    (etc / f"{UUID}.conf").write_text("garbage that cachewise does not use\n")
    assert FakeState().read_config(TUNABLES_FILE) == ""  # there, but refused: not "no file"
    apply(one, None, tmp_path / "state", quiet, read_state=FakeState)  # type: ignore[arg-type]
    assert not (etc / f"{UUID}.conf").exists() and FakeState().read_config(TUNABLES_FILE) is None


def test_a_detach_rolled_back_writes_the_file_it_removed_back_as_it_was(etc: Path, tmp_path: Path) -> None:
    """The detach removes the file first; rolled back (the flush never ended, say), the device keeps
    its cache and its tunables, and so must the file that sets them again at boot: what the step
    found is journaled as it begins (the plan was made without reading the file)."""
    plan = bcache_detach(INV, "/dev/bcache/by-uuid/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08")
    one = _only(plan, plan.steps[0])
    tunables.write(UUID, tunables.parse_settings(KEPT))
    journal = apply(one, None, tmp_path / "state", quiet, read_state=FakeState)  # type: ignore[arg-type]
    assert tunables.read(UUID) is None
    begin = next(r for r in journal.records() if r["event"] == "step-begin")
    assert begin["kept"] == KEPT
    undone: list[Event] = []
    rollback(journal, None, tmp_path / "state", undone.append, read_state=FakeState)  # type: ignore[arg-type]
    assert tunables.read(UUID).settings == KEPT  # type: ignore[union-attr]
    assert [e.message for e in undone if e.kind == "undo"] == [f"printf '%s\\n' {KEPT} > {TUNABLES_FILE}"]
    # A damaged or hostile record is no value: the rollback writes nothing rather than fail forever.
    for bad in ("sequential_cutoff=1 sequential_cutoff=2", "\x1b[2J", "writeback_percent=400", "rm -rf /"):
        journal.write("step-begin", step=one.steps[0].id, argv=[], kept=bad)
        assert journal.kept(one.steps[0].id) is None, bad
    # No file before the detach: nothing is journaled, and the rollback writes none.
    tunables.remove(UUID)
    journal = apply(one, None, tmp_path / "state2", quiet, read_state=FakeState)  # type: ignore[arg-type]
    rollback(journal, None, tmp_path / "state2", quiet, read_state=FakeState)  # type: ignore[arg-type]
    assert tunables.read(UUID) is None


def test_a_file_that_cannot_be_written_stops_the_plan_with_a_sentence(etc: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("advisor.apply.run.FAILURE_PATIENCE", 0.0)  # no other program writes it meanwhile
    etc.mkdir(parents=True)
    (etc / f"{UUID}.conf").write_text("writeback_percent=1\n")  # someone's own file: not replaced
    plan = bcache_create(INV, "sda", "nvme0n1")
    from advisor.apply.run import ApplyError

    with pytest.raises(ApplyError) as err:
        apply(_only(plan, plan.steps[-1]), None, tmp_path / "state", quiet, read_state=FakeState)  # type: ignore[arg-type]
    assert "exists and was not written by cachewise" in cli_words(err.value)
    assert (etc / f"{UUID}.conf").read_text() == "writeback_percent=1\n"


# --- the command line ---


@pytest.fixture
def root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cachewise.core.tunables.is_root", lambda: True)


def test_tunables_apply_json_says_what_it_set(sysfs: Path, etc: Path, root: None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    tunables.write(UUID, tunables.parse_settings(KEPT))
    assert main(["tunables", "apply", "--device", "/dev/bcache0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "cachewise.tunables/1" and data["action"] == "apply" and data["refused"] == []
    (device,) = data["devices"]
    assert (device["device"], device["backing"], device["uuid"]) == ("bcache0", "sdd", UUID)
    assert device["changes"][0] == {"key": "sequential_cutoff", "configured": 8 << 20, "configured_text": "8.0M",
                                    "before": "4.0M", "after": "8388608", "changed": True, "error": None}
    assert main(["tunables", "apply"]) == 0  # every device that has a file
    assert "bcache0: sequential_cutoff 8388608 (already), writeback_percent 20 (already), from" in \
        capsys.readouterr().out


def test_tunables_apply_refuses_a_hostile_file_and_a_non_root_user(sysfs: Path, etc: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cachewise.core.tunables.is_root", lambda: False)
    assert main(["tunables", "apply", "--device", "bcache0"]) == 1
    assert "writes to its sysfs files, which only root may do. Run it with sudo." in capsys.readouterr().err
    monkeypatch.setattr("cachewise.core.tunables.is_root", lambda: True)
    etc.mkdir(parents=True)
    (etc / f"{UUID}.conf").write_text("writeback_percent=10; reboot\n")
    assert main(["tunables", "apply", "--device", "bcache0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 1 sets writeback_percent to '10; reboot'" in err
    assert "Traceback" not in err and (backing_dir(sysfs) / "writeback_percent").read_text().strip() == "10"


def test_tunables_apply_as_udev_runs_it_logs_and_prints_nothing(sysfs: Path, etc: Path, root: None,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    logged: list[tuple[int, str]] = []
    monkeypatch.setattr("syslog.openlog", lambda *a: None)
    monkeypatch.setattr("syslog.syslog", lambda prio, text: logged.append((prio, text)))
    naps: list[float] = []
    monkeypatch.setattr("advisor.tunables.time.sleep", naps.append)
    # No file at all: done at once, the device not even waited for.
    assert main(["tunables", "apply", "--udev", "--device", "/dev/bcache9"]) == 0
    assert naps == [] and logged == []
    tunables.write(UUID, tunables.parse_settings(KEPT))
    assert main(["tunables", "apply", "--udev", "--device", "/dev/bcache0"]) == 0
    assert capsys.readouterr().out == ""
    (prio, text), = logged
    assert "tunables of /dev/bcache0: bcache0: sequential_cutoff 4.0M -> 8388608, writeback_percent 10 -> 20" in text
    # A flash-only volume (bcache's, without a backing device) is no error.
    flash = sysfs / "devices" / "virtual" / "block" / "bcache1" / "bcache"
    flash.mkdir(parents=True)
    os.symlink(flash.parent, sysfs / "class" / "block" / "bcache1")
    assert main(["tunables", "apply", "--udev", "--device", "/dev/bcache1"]) == 0


def test_the_udev_rule_runs_this_command_bounded_and_the_package_installs_it() -> None:
    rule = (REPO / "packaging" / "debian" / "cachewise-bcache-tunables.rules").read_text()
    lines = [line for line in rule.splitlines() if line and not line.startswith("#")]
    assert 'KERNEL!="bcache[0-9]*", GOTO="cachewise_bcache_end"' in lines
    assert 'ACTION=="change", ENV{CACHED_UUID}=="?*", GOTO="cachewise_bcache_apply"' in lines
    (run,) = [line for line in lines if line.startswith("RUN+=")]
    argv = run.removeprefix('RUN+="').removesuffix('"').split()
    assert argv[:4] == ["/usr/bin/timeout", "--kill-after=5", "30", "/usr/bin/cachewise"]
    args = build_parser().parse_args([a.replace("%k", "bcache0") for a in argv[4:]])
    assert (args.command, args.tunables_command, args.udev, args.device) == ("tunables", "apply", True, "/dev/bcache0")
    install = (REPO / "packaging" / "debian" / "rules").read_text()
    assert ("install -D -m 644 debian/cachewise-bcache-tunables.rules "
            "$(PKG)/lib/udev/rules.d/70-cachewise-bcache-tunables.rules") in install, "after 69-bcache.rules"
    assert "/etc/cachewise/bcache" in (REPO / "packaging" / "debian" / "cachewise.postrm").read_text()


def test_tunables_show_json_lists_files_live_values_and_drift(sysfs: Path, etc: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    tunables.write(UUID, tunables.parse_settings(KEPT))
    assert main(["tunables", "show", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (shown,) = data["files"]
    assert shown["settings"] == {"sequential_cutoff": 8 << 20, "writeback_percent": 20}
    assert shown["live"] == {"sequential_cutoff": "4.0M", "writeback_percent": "10"} and shown["device"] == "bcache0"
    assert [f["facts"]["key"] for f in data["findings"]] == ["sequential_cutoff", "writeback_percent"]
    assert main(["tunables", "show", "--wide"]) == 0
    out = capsys.readouterr().out
    assert "note: bcache0: writeback_percent is 10, configured 20 in" in out


def test_status_and_scan_say_what_drifted_in_text_and_json(sysfs: Path, etc: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from cachewise.core.watch import Status

    monkeypatch.setattr("cachewise.cli.caches.watch.status", lambda core: Status([], ()))
    monkeypatch.setattr("cachewise.cli.disks.discover.scan", lambda core, **kw: INV)
    tunables.write(UUID, {"sequential_cutoff": 8 << 20, "writeback_percent": 10})
    state = ["--state-dir", str(tmp_path / "state")]
    assert main([*state, "status", "--json"]) == 0
    (drift,) = json.loads(capsys.readouterr().out)["tunables"]
    assert drift["code"] == "tunable-drifted" and drift["facts"]["live"] == "4.0M"
    assert main([*state, "status"]) == 0
    line = f"note: bcache0: sequential_cutoff is 4.0M, configured 8.0M in {etc}/{UUID}.conf: re-apply with `"
    out = capsys.readouterr().out
    assert line in out and "cachewise tunables apply --device /dev/bcache0`." in out
    assert main([*state, "scan", "--json", "--no-record"]) == 0
    assert [f["code"] for f in json.loads(capsys.readouterr().out)["tunables"]] == ["tunable-drifted"]
    assert main([*state, "scan", "--no-record", "--wide"]) == 0
    assert line in capsys.readouterr().out
    # A saved snapshot is not this machine: its scan says nothing of this machine's files.
    assert main([*state, "scan", "--json", "--from-raw", str(LAB_SCAN / "raw-udev.json")]) == 0
    assert json.loads(capsys.readouterr().out)["tunables"] == []


def test_the_make_bcache_undo_stops_what_is_registered_before_it_wipes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak's crash loop: a rollback of bcache-create after its register steps (or after
    udev's 69-bcache.rules registered the devices by itself) ran wipefs on a registered device:
    "Device or resource busy". The undo stops the device and the set first, computed from the
    step's shape; a stop of what is not registered does nothing; a stop waits until the kernel
    has released the device (its sysfs directory gone); a bcache device mounted since is not
    stopped (nor wiped after it)."""
    from advisor.apply import run
    from advisor.apply.state import RoleMissing

    plan = bcache_create(INV, "sda", "nvme0n1")
    step = next(s for s in plan.steps if s.id == "make-bcache")
    cset = step.argv[step.argv.index("--cset-uuid") + 1]
    bp, cp = step.argv[-3], step.argv[-1]
    assert step.undo_commands == (
        "echo 1 > {backing}/bcache/stop",
        f"echo 1 > /sys/fs/bcache/{cset}/stop",
        f"wipefs --all {bp}",
        f"wipefs --all {cp}",
    )
    device_stop, set_stop = (Step("undo-make-bcache", (), write=w) for w in step.undo_writes)

    def gone(self: LiveState, path: str) -> str:
        raise RoleMissing("backing")

    monkeypatch.setattr(LiveState, "resolve", gone)  # the backing device is not there at all
    assert run._sysfs_step(device_stop, None, quiet, plan) == (0, run.NOT_REGISTERED)  # type: ignore[arg-type]
    monkeypatch.setattr(LiveState, "resolve", lambda self, path: str(tmp_path / path.lstrip("/{").replace("}", "")))
    assert run._sysfs_step(set_stop, None, quiet, plan) == (0, run.NOT_REGISTERED)  # type: ignore[arg-type]
    directory = tmp_path / "sys" / "fs" / "bcache" / cset
    directory.mkdir(parents=True)
    (directory / "stop").write_text("")
    bcache0 = tmp_path / "bcache0"
    bcache0.mkdir()
    (directory / "bdev0").mkdir()
    os.symlink(bcache0, directory / "bdev0" / "dev")  # an attached backing device's bcache device
    monkeypatch.setattr(run, "_in_use", lambda name, state: name == "bcache0")
    code, said = run._sysfs_step(set_stop, None, quiet, plan)  # type: ignore[arg-type]
    assert code == 1 and "/dev/bcache0 is mounted or held" in said and (directory / "stop").read_text() == ""
    monkeypatch.setattr(run, "_in_use", lambda name, state: False)

    def released() -> None:  # the kernel removes the directory a moment after the write
        time.sleep(0.3)
        shutil.rmtree(directory)

    thread = threading.Thread(target=released)
    thread.start()
    assert run._sysfs_step(set_stop, None, quiet, plan) == (0, "")  # type: ignore[arg-type]
    thread.join()
    assert not directory.exists()
    directory.mkdir()
    (directory / "stop").write_text("")
    monkeypatch.setattr(run, "STOP_SECONDS", 0.5)
    code, said = run._sysfs_step(set_stop, None, quiet, plan)  # type: ignore[arg-type]
    assert code == 1 and "still there" in said


def test_a_bcache_device_is_in_use_when_held_mounted_or_swapped_on() -> None:
    from advisor.apply.run import _in_use

    bcache0 = next(d for d in INV.devices if d.name == "bcache0")

    class Seen:  # the state a stop reads: discovery's bcache0, as given
        def __init__(self, **facts: object) -> None:
            self.dev = replace(bcache0, holders=(), mountpoints=(), swap=False, partitions=())
            self.dev = replace(self.dev, **facts)

        def device(self, path: str) -> object:
            return self.dev if path == "/dev/bcache0" else None

        def partitions(self, dev: object) -> list[object]:
            return []

    assert not _in_use("bcache0", Seen())  # type: ignore[arg-type]
    assert _in_use("bcache0", Seen(mountpoints=("/srv",)))  # type: ignore[arg-type]
    assert _in_use("bcache0", Seen(swap=True))  # type: ignore[arg-type]
    assert _in_use("bcache0", Seen(holders=("dm-3",)))  # type: ignore[arg-type]
    assert not _in_use("bcache9", Seen(mountpoints=("/srv",)))  # type: ignore[arg-type]  # not there: nothing to stop
