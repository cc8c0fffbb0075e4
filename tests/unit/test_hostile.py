"""Hostile and careless inputs, class by class: tampered and role-confused plans, planted links,
PATH, full disks, FIFOs, deep JSON, device cycles, locked and damaged histories, terminals.

Each case is refused with its exit code and one sentence, with no traceback, in bounded time,
and leaves the files it was handed as they were. Cases that go through the command line run
it as a process (so a closed or full standard output is real); the others call the domain
directly where the fault must be made (a full disk, a held lock). Applying is refused before
any command could run: the plans name the lab's disks, which this machine does not have.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, LAB_SCAN
from tests.unit.test_bad_inputs import good_plan

RAW = LAB_SCAN / "raw-udev.json"
TRACE = FIXTURES / "traces" / "fio-v3.iolog"
ORIGIN = "/dev/labvg/data"
NVME = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"
NOBODY = 65534
CLASSES = ("plan", "links", "path", "full", "fifo", "deep", "cycle", "history", "terminal")
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="applying and other users' files need root")


# --- the machinery -------------------------------------------------------------------------


def _digest(tmp: Path) -> dict[str, str]:
    """Every file and link under ``tmp`` (but cachewise's own state directory), by content."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(tmp):
        if Path(dirpath).name == "state" or "/state/" in dirpath + "/":
            continue
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / name
            if p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[str(p)] = "special"
    return out


@dataclass
class Cli:
    """A command line run as a process: ``argv`` after ``cachewise`` ("{tmp}" is the case's folder)."""

    name: str
    cls: str
    argv: list[str]
    message: str
    code: int = 1
    setup: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    stdout: str = "pipe"  # "pipe", "closed", "full" or "null"
    stdin: str = "null"
    root: bool = False


def run_cli(case: Cli, tmp: Path) -> tuple[int, str, str, float]:
    argv = [a.replace("{tmp}", str(tmp)) for a in case.argv]
    env = {**os.environ, "CACHEWISE_STATE_DIR": str(tmp / "state"), **{k: v.replace("{tmp}", str(tmp))
                                                                         for k, v in case.env.items()}}
    out: Any = subprocess.PIPE
    if case.stdout == "full":
        out = open("/dev/full", "w")  # noqa: SIM115 - closed below
    elif case.stdout == "null":
        out = subprocess.DEVNULL
    closed = case.stdout == "closed"
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "cachewise", *argv], stdin=subprocess.DEVNULL, stdout=None if closed else out,
        stderr=subprocess.PIPE, text=True, env=env, timeout=60, check=False, cwd=tmp,
        preexec_fn=(lambda: os.close(1)) if closed else None,  # noqa: PLW1509 - closes fd 1 in the child only
    )
    if case.stdout == "full":
        out.close()
    return proc.returncode, proc.stdout or "", proc.stderr, time.monotonic() - start


def assert_refused(code: int, err: str, seconds: float, want_code: int, message: str) -> None:
    assert code == want_code, err
    assert message in err, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    said = [line for line in err.splitlines() if line.startswith("cachewise")]
    assert len(said) == 1, f"one sentence, not {len(said)}: {err}"
    assert seconds < 30, f"took {seconds:.0f} s"


def plan_json(change: Callable[[dict[str, Any]], object] | None = None) -> dict[str, Any]:
    data = json.loads(json.dumps(good_plan()))
    if change is not None:
        change(data)
    return data


def write_plan(change: Callable[[dict[str, Any]], object] | None = None, name: str = "plan.json",
               text: str | bytes | None = None, mode: int = 0o644, owner: int | None = None) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        body = text if text is not None else json.dumps(plan_json(change))
        path = tmp / name
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
        path.chmod(mode)
        if owner is not None:
            os.chown(path, owner, -1)
    return setup


def step(argv: list[str], undo: list[list[str]] | None = None, sid: str = "evil") -> dict[str, Any]:
    return {"id": sid, "argv": argv, "undo": undo or []}


def fifo(name: str) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(tmp / name)
    return setup


def deep(name: str, depth: int = 200_000, prefix: str = "") -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(prefix + "[" * depth + "]" * depth)
    return setup


def snapshot(change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        data = json.loads(RAW.read_text())
        change(data)
        (tmp / "raw.json").write_text(json.dumps(data))
    return setup


def block(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(b for b in data["blocks"] if b["name"] == name)  # type: ignore[no-any-return]


def link_by(owner: int, name: str, target: str, mkdir: bool = False) -> Callable[[Path], None]:
    """A link ``name`` to ``target`` that belongs to ``owner`` (the folder it points at made)."""
    def setup(tmp: Path) -> None:
        if mkdir:
            Path(target.replace("{tmp}", str(tmp))).mkdir(parents=True, exist_ok=True)
        (tmp / name).symlink_to(target.replace("{tmp}", str(tmp)))
        os.lchown(tmp / name, owner, -1)
    return setup


def journal_with(first_line: str | None = None, fifo_name: str | None = None) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        d = tmp / "state" / "journal"
        d.mkdir(parents=True)
        os.chmod(tmp / "state", 0o700)
        if fifo_name:
            os.mkfifo(d / fifo_name)
        if first_line is not None:
            (d / "20260101T000000-x.jsonl").write_text(first_line + "\n")
    return setup


APPLY = ["apply", "{tmp}/plan.json", "--yes"]
PLAN = ["plan", "lvmcache-attach", "--from-raw", str(RAW), "--lv", "labvg/data", "--ssd", "nvme0n1", "--size", "256m"]
SCAN = ["scan", "--from-raw", "{tmp}/raw.json"]

CLI_CASES = [
    # tampered and role-confused plans: refused when the plan is read, before any device is looked at
    Cli("wipefs-on-the-origin", "plan", APPLY, "is not a wipefs command a cachewise recipe writes in a lvmcache-attach",
        setup=write_plan(lambda p: p["steps"].insert(0, step(["wipefs", "--all", ORIGIN]))), root=True),
    Cli("pvcreate-on-the-origin", "plan", APPLY, "names a device the plan is not bound to in that role",
        setup=write_plan(lambda p: p["steps"][0].update(argv=["pvcreate", "--yes", ORIGIN])), root=True),
    Cli("lvremove-another-lv", "plan", APPLY, "names the LV othervg/home, which is neither the plan's origin",
        setup=write_plan(lambda p: p["steps"].append(step(["lvremove", "--yes", "othervg/home"]))), root=True),
    Cli("undo-removes-the-origin", "plan", APPLY, "would remove or overwrite the LV labvg/data, which the plan did not create",
        setup=write_plan(lambda p: p["steps"][0].update(undo=[["lvremove", "--yes", "labvg/data"]])), root=True),
    Cli("vgextend-another-vg", "plan", APPLY, "names the VG othervg",
        setup=write_plan(lambda p: p["steps"][1].update(argv=["vgextend", "othervg", NVME])), root=True),
    Cli("vgremove-appended", "plan", APPLY, "is not a vgremove command a cachewise recipe writes",
        setup=write_plan(lambda p: p["steps"].append(step(["vgremove", "--yes", "labvg"]))), root=True),
    Cli("duplicate-argv-key", "plan", APPLY, "the key 'argv' appears twice",
        setup=write_plan(text=json.dumps(plan_json()).replace('"argv": [', '"argv": ["wipefs"], "argv": [', 1)),
        root=True),
    Cli("plan-not-utf8", "plan", APPLY, "it is not UTF-8 text",
        setup=write_plan(text=b'{"schema": "cachewise.plan/1", "title": "\xff\xfe"}'), root=True),
    Cli("path-with-dot", "plan", APPLY, "is not a stable device path",
        setup=write_plan(lambda p: p["devices"][1].update(path="/dev/./nvme0n1")), root=True),
    Cli("path-block-number", "plan", APPLY, "is not a stable device path",
        setup=write_plan(lambda p: p["devices"][1].update(path="/dev/block/259:0")), root=True),
    Cli("path-fd", "plan", APPLY, "is not a stable device path",
        setup=write_plan(lambda p: p["devices"][1].update(path="/dev/fd/0")), root=True),
    Cli("path-shm-link", "plan", APPLY, "is not a stable device path",
        setup=write_plan(lambda p: p["devices"][1].update(path="/dev/shm/nvme")), root=True),
    Cli("made-on-another-host", "plan", APPLY, "the plan was made on another host (elsewhere)",
        setup=write_plan(lambda p: p.update(host="elsewhere")), root=True),
    Cli("made-from-a-snapshot", "plan", APPLY, "from a saved snapshot",
        setup=write_plan(lambda p: p.update(from_snapshot=True)), root=True),
    Cli("plan-and-resume", "plan", [*APPLY, "--resume"], "these are two different runs", setup=write_plan(),
        root=True),
    Cli("plan-writable-by-all", "plan", APPLY, "other users can write to it", setup=write_plan(mode=0o666),
        root=True),
    Cli("plan-of-another-user", "plan", APPLY, "it belongs to nobody", setup=write_plan(owner=NOBODY), root=True),
    Cli("cache-pool-over-the-origin", "plan", APPLY, "would remove or overwrite the LV labvg/data",
        setup=write_plan(lambda p: p["steps"][4]["argv"].__setitem__(5, "labvg/data"))),
    Cli("remove-before-create", "plan", APPLY, "which is neither the plan's origin nor one the plan creates before it",
        setup=write_plan(lambda p: p["steps"].insert(0, step(["lvremove", "--yes", "labvg/data_cache"])))),
    Cli("created-twice", "plan", APPLY, "it creates labvg/data_cache, which the plan already has",
        setup=write_plan(lambda p: p["steps"].insert(3, {**p["steps"][2], "id": "again"}))),
    Cli("forged-postcondition", "plan", APPLY, "its postconditions are not the ones its command implies",
        setup=write_plan(lambda p: p["steps"][5].update(post=[{"kind": "pv", "args": {"device": NVME}}]))),
    Cli("precondition-left-out", "plan", APPLY, "its preconditions leave out",
        setup=write_plan(lambda p: p["steps"][0].update(pre=[]))),
    Cli("control-characters", "plan", APPLY, "the plan holds control characters",
        setup=write_plan(lambda p: p.update(notes=["ok\u001b[30A\u001b[2Kall fine"]))),
    Cli("schema-superscript", "plan", APPLY, "this is not a cachewise plan",
        setup=write_plan(lambda p: p.update(schema="cachewise.plan/\u00b2"))),
    Cli("absurd-device-size", "plan", APPLY, "is out of range",
        setup=write_plan(lambda p: p["devices"][1].update(size_bytes=2**70)), root=True),
    # planted links
    Cli("state-dir-link-of-another-user", "links", ["--state-dir", "{tmp}/st", "history"],
        "a link that belongs to nobody", setup=link_by(NOBODY, "st", "{tmp}/real", mkdir=True), root=True),
    Cli("state-dir-of-another-user", "links", ["--state-dir", "{tmp}/st", "history"], "belongs to nobody",
        setup=lambda tmp: (os.mkdir(tmp / "st", 0o755), os.chown(tmp / "st", NOBODY, -1)), root=True),
    Cli("state-dir-writable-by-all", "links", ["--state-dir", "{tmp}/st", "history"], "can be written by other users",
        setup=lambda tmp: (os.mkdir(tmp / "st"), os.chmod(tmp / "st", 0o777))),
    Cli("history-is-a-link", "links", ["--state-dir", "{tmp}/st", "history"], "is a link",
        setup=lambda tmp: (os.mkdir(tmp / "st", 0o700), (tmp / "victim").write_text("keep"),
                           (tmp / "st" / "history.sqlite3").symlink_to(tmp / "victim"))),
    Cli("journal-dir-is-a-link", "links", ["--state-dir", "{tmp}/st", "apply", "--resume", "--yes"], "it is a link",
        setup=lambda tmp: (os.mkdir(tmp / "st", 0o700), os.mkdir(tmp / "elsewhere"),
                           (tmp / "elsewhere" / "20260101T000000-x.jsonl").write_text("{}\n"),
                           (tmp / "st" / "journal").symlink_to(tmp / "elsewhere")), root=True),
    Cli("output-folder-through-a-link", "links", [*PLAN, "-o", "{tmp}/ln/p.json"], "a link that belongs to nobody",
        setup=link_by(NOBODY, "ln", "{tmp}/real", mkdir=True), root=True),
    Cli("save-raw-through-a-link", "links", ["scan", "--save-raw", "{tmp}/ln/raw.json", "--no-record"],
        "a link that belongs to nobody", setup=link_by(NOBODY, "ln", "{tmp}/real", mkdir=True), root=True),
    Cli("prometheus-file-is-a-link", "links", ["status", "--prometheus", "{tmp}/c.prom"], "is a link",
        setup=lambda tmp: ((tmp / "victim").write_text("keep"), (tmp / "c.prom").symlink_to(tmp / "victim"))),
    Cli("prometheus-file-of-another-program", "links", ["status", "--prometheus", "{tmp}/c.prom"],
        "exists and was not written by cachewise", setup=lambda tmp: (tmp / "c.prom").write_text("# mine\n")),
    # PATH: a planted tool is not what root runs (the marker it would leave stays absent)
    Cli("planted-lsblk-on-path", "path", ["scan", "--json", "--no-record"], "", code=0,
        setup=lambda tmp: _plant(tmp / "bin", ("lsblk", "blkid", "udevadm", "lvs", "pvs")),
        env={"PATH": "{tmp}/bin:/usr/bin:/bin"}, stdout="null", root=True),
    Cli("dot-on-path", "path", ["scan", "--json", "--no-record"], "", code=0,
        setup=lambda tmp: _plant(tmp, ("lsblk", "blkid", "dmsetup")), env={"PATH": ".:/usr/bin:/bin"}, stdout="null",
        root=True),
    # full disks
    Cli("stdout-full-table", "full", ["scan", "--from-raw", str(RAW)], "cannot write to standard output",
        stdout="full"),
    Cli("stdout-full-json", "full", ["scan", "--from-raw", str(RAW), "--json"], "No space left on device",
        stdout="full"),
    Cli("stdout-full-plan", "full", [*PLAN, "--json"], "cannot write to standard output", stdout="full"),
    # FIFOs and devices where a file is expected
    Cli("plan-is-a-fifo", "fifo", APPLY, "it is a FIFO, not a regular file", setup=fifo("plan.json"), root=True),
    Cli("plan-is-dev-zero", "fifo", ["apply", "/dev/zero", "--yes"], "it is a character device", root=True),
    Cli("recommendation-is-a-fifo", "fifo", [*PLAN[:-2], "--recommendation", "{tmp}/rec.json"], "it is a FIFO",
        setup=fifo("rec.json")),
    Cli("snapshot-is-a-fifo", "fifo", SCAN, "it is a FIFO", setup=fifo("raw.json")),
    Cli("snapshot-is-dev-zero", "fifo", ["scan", "--from-raw", "/dev/zero"], "it is a character device"),
    Cli("trace-is-a-fifo", "fifo", ["analyze", "{tmp}/t.iolog"], "is not a readable file", setup=fifo("t.iolog")),
    Cli("prometheus-is-a-fifo", "fifo", ["status", "--prometheus", "{tmp}/c.prom"], "is not a regular file",
        setup=fifo("c.prom")),
    Cli("journal-is-a-fifo", "fifo", ["apply", "--resume", "--yes"], "it is a FIFO",
        setup=journal_with(fifo_name="20260101T000000-x.jsonl"), root=True),
    # deep JSON
    Cli("plan-nested-deep", "deep", APPLY, "nests deeper than 64 levels", setup=deep("plan.json"), root=True),
    Cli("snapshot-nested-deep", "deep", SCAN, "nests too deeply", setup=deep("raw.json", 600_000)),
    Cli("recommendation-nested-deep", "deep", [*PLAN[:-2], "--recommendation", "{tmp}/rec.json"],
        "nests deeper than 64 levels", setup=deep("rec.json")),
    Cli("journal-record-nested-deep", "deep", ["apply", "--resume", "--yes"], "its first record is not the plan",
        setup=journal_with('{"event": "plan", "plan": ' + "[" * 100_000 + "]" * 100_000 + "}"), root=True),
    Cli("trace-header-nested-deep", "deep", ["analyze", "{tmp}/t.cwtrace"], "has a corrupt header",
        setup=deep("t.cwtrace", 50_000, prefix="CACHEWISE-TRACE 1\n")),
    # devices that hold each other in a circle
    Cli("holders-in-a-circle", "cycle", SCAN, "hold each other in a circle",
        setup=snapshot(lambda d: (block(d, "sdb").update(holders=["sdc"]), block(d, "sdc").update(holders=["sdb"])))),
    Cli("partition-of-itself", "cycle", SCAN, "hold each other in a circle",
        setup=snapshot(lambda d: block(d, "sdb").update(parent="sdb"))),
    Cli("slaves-three-round", "cycle", SCAN, "hold each other in a circle",
        setup=snapshot(lambda d: (block(d, "sda").update(slaves=["sdb"]), block(d, "sdb").update(slaves=["sdd"]),
                                  block(d, "sdd").update(slaves=["sda"])))),
    Cli("disk-held-by-its-partition", "cycle", SCAN, "hold each other in a circle",
        setup=snapshot(lambda d: block(d, "sdc").update(slaves=["sdc1"]))),
    Cli("holds-itself", "cycle", SCAN, "hold each other in a circle",
        setup=snapshot(lambda d: block(d, "sdd").update(holders=["sdd"]))),
    Cli("circle-in-recommend", "cycle", ["recommend", "--from-raw", "{tmp}/raw.json", "--slow", "sda", "--fast",
                                         "nvme0n1", "--workload", "database"], "hold each other in a circle",
        setup=snapshot(lambda d: block(d, "sdb").update(parent="sdb"))),
    # histories
    Cli("history-newer-schema", "history", ["--state-dir", "{tmp}/st", "history"], "newer than this cachewise knows",
        setup=lambda tmp: _history(tmp / "st", "PRAGMA user_version = 99")),
    Cli("history-truncated", "history", ["--state-dir", "{tmp}/st", "history"], "is not a usable cachewise history",
        setup=lambda tmp: _damaged(tmp / "st", keep=100)),
    Cli("history-pages-damaged", "history", ["--state-dir", "{tmp}/st", "history"], "not a usable cachewise history",
        setup=lambda tmp: _damaged(tmp / "st", scramble=True)),
    Cli("history-is-a-directory", "history", ["--state-dir", "{tmp}/st", "history"], "cannot open the history",
        setup=lambda tmp: ((tmp / "st").mkdir(mode=0o700), (tmp / "st" / "history.sqlite3").mkdir())),
    Cli("state-dir-dangling-link", "history", ["--state-dir", "{tmp}/st", "history"], "which does not exist",
        setup=lambda tmp: (tmp / "st").symlink_to(tmp / "nowhere")),
    # terminals
    Cli("tui-without-a-terminal", "terminal", ["tui"], "needs a terminal"),
    Cli("stdout-closed", "terminal", ["scan", "--from-raw", str(RAW)], "standard output is closed", stdout="closed"),
    Cli("name-with-a-newline", "terminal", ["plan", "bcache-create", "--from-raw", str(RAW), "--backing",
                                            "/dev/sdb\nrm -rf", "--cache", "nvme0n1"], "'/dev/sdb\\nrm -rf'"),
    Cli("name-with-a-trailing-space", "terminal", ["plan", "bcache-create", "--from-raw", str(RAW), "--backing",
                                                   "/dev/sdb ", "--cache", "nvme0n1"], "'/dev/sdb '"),
    Cli("name-with-a-cyrillic-letter", "terminal", ["plan", "lvmcache-attach", "--from-raw", str(RAW), "--lv",
                                                    "labvg/d\u0430ta", "--ssd", "nvme0n1", "--size", "256m"],
        "'labvg/d\\u0430ta'"),
]


def _plant(folder: Path, tools: tuple[str, ...]) -> None:
    """Programs that would leave a marker beside them if anyone ran them."""
    folder.mkdir(exist_ok=True)
    for tool in tools:
        (folder / tool).write_text(f"#!/bin/sh\ntouch {folder}/RAN-{tool}\nexit 0\n")
        (folder / tool).chmod(0o755)


def _history(state: Path, *statements: str) -> None:
    from advisor.history import History

    state.mkdir(mode=0o700)
    History(state / "history.sqlite3").close()
    db = sqlite3.connect(state / "history.sqlite3")
    for s in statements:
        db.execute(s)
    db.commit()
    db.close()


def _damaged(state: Path, keep: int | None = None, scramble: bool = False) -> None:
    _history(state)
    path = state / "history.sqlite3"
    data = bytearray(path.read_bytes())
    if keep is not None:
        data = data[:keep]
    if scramble:
        for i in range(100, len(data), 7):
            data[i] = (data[i] * 31 + 7) % 256
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.name for c in CLI_CASES])
def test_hostile_command_line(case: Cli, tmp_path: Path) -> None:
    if case.root and not ROOT:
        pytest.skip("needs root")
    if case.setup is not None:
        case.setup(tmp_path)
    before = _digest(tmp_path)
    code, _, err, seconds = run_cli(case, tmp_path)
    if case.code == 0:
        assert code == 0 and "Traceback" not in err, err
    else:
        assert_refused(code, err, seconds, case.code, case.message)
    assert _digest(tmp_path) == before, "the files handed in were changed"
    assert not list(tmp_path.rglob("RAN-*")), "a planted program ran"


# --- in-process cases: faults made where they happen ------------------------------------------

IN_PROCESS: list[tuple[str, str]] = []


def case(cls: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def mark(fn: Callable[..., None]) -> Callable[..., None]:
        IN_PROCESS.append((fn.__name__, cls))
        return fn
    return mark


@case("plan")
def test_a_plan_file_cannot_describe_a_step_as_other_than_it_is() -> None:
    from advisor.plan.model import Plan

    data = plan_json(lambda p: p["steps"][0].update(description="look at the SSD (harmless)", destructive=False))
    data["destroys"] = []
    data["devices"][1]["signature"] = "ext4"
    data["steps"][0]["argv"] = ["pvcreate", "--yes", "--force", NVME]
    plan = Plan.from_json(data)
    assert plan.steps[0].description == f"make {NVME} an LVM physical volume, over what it holds"
    assert plan.steps[0].destructive and plan.destroys == (f"{NVME}: ext4",)


@case("plan")
def test_a_device_the_plan_overwrites_must_hold_what_the_plan_knew() -> None:
    from advisor.apply.preflight import verify_devices
    from advisor.plan.model import Plan
    from tests.unit.test_execute import FakeLvm

    plan = Plan.from_json(plan_json())
    lvm = FakeLvm()
    state = lvm.state()
    real = state.device
    state.device = lambda path: dataclasses.replace(real(path), fs_type="xfs") if path == NVME else real(path)  # type: ignore[method-assign,misc]
    problems = [p.sentence() for p in verify_devices(plan, state)]
    assert any("now holds xfs, which the plan would destroy but did not know of" in p for p in problems), problems
    assert verify_devices(plan, state, resuming=True) == []


@case("plan")
def test_a_bcache_removal_waits_for_what_removals_wait_for() -> None:
    from advisor.disks.collect import RawSystem
    from advisor.disks.discovery import build_inventory
    from advisor.plan.model import Plan, PlanError
    from recipes.bcache import bcache_create, bcache_detach

    plan = bcache_detach(build_inventory(RawSystem.load(RAW)),
                         "/dev/bcache/by-uuid/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08", wipe_cache=True)
    data = plan.to_json()
    flush = next(s for s in data["steps"] if s["id"] == "flush")
    flush["wait"] = [flush["wait"][0], ""]
    with pytest.raises(PlanError, match="not a state a removal waits for"):
        Plan.from_json(data)
    data = bcache_create(build_inventory(RawSystem.load(RAW)), "sdg", "nvme0n1").to_json()
    attach = next(s for s in data["steps"] if s["id"] == "attach")
    attach["write"] = [attach["write"][0], "00000000-0000-0000-0000-000000000000"]
    with pytest.raises(PlanError, match="names 2 cache sets"):
        Plan.from_json(data)


@case("plan")
def test_names_a_fresh_plan_creates_must_not_exist_yet() -> None:
    from advisor.apply.preflight import verify_names
    from advisor.plan.model import Plan
    from advisor.readers.lvm import Lv
    from tests.unit.test_execute import FakeLvm

    plan = Plan.from_json(plan_json())
    state = FakeLvm().state()
    assert verify_names(plan, state) == []
    state.lvs["labvg/data_cache"] = Lv.from_row({"lv_name": "data_cache", "vg_name": "labvg", "segtype": "linear"})
    assert [p.sentence() for p in verify_names(plan, state)] == [
        "labvg/data_cache exists already, and the plan would create it"]


@case("plan")
def test_a_removal_stops_only_the_cache_set_its_backing_device_is_attached_to(tmp_path: Path) -> None:
    from advisor.apply.preflight import verify_cache_set
    from advisor.apply.state import LiveState
    from advisor.disks.collect import RawSystem
    from advisor.disks.discovery import build_inventory
    from recipes.bcache import bcache_detach

    plan = bcache_detach(build_inventory(RawSystem.load(RAW)), "/dev/bcache/by-uuid/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08")
    wanted = "92d9f462-55cf-4982-b1c4-ecef2705350f"  # the cache set of the snapshot's bcache0
    assert f"/sys/fs/bcache/{wanted}/stop" in [s.write[0] for s in plan.steps if s.write]
    backing, sets = tmp_path / "backing", tmp_path / "sets"
    (backing / "bcache").mkdir(parents=True)
    (backing / "bcache" / "state").write_text("dirty\n")
    for uuid in (wanted, "9d0e5a8e-0000-4000-8000-000000000001"):
        (sets / uuid).mkdir(parents=True)

    class Here(LiveState):
        def resolve(self, path: str) -> str:
            return path.replace("{backing}", str(backing)).replace("/sys/fs/bcache", str(sets))

        def sysfs_exists(self, path: str) -> bool:
            return os.path.exists(self.resolve(path))

    state = Here(plan=plan)
    link = backing / "bcache" / "cache"
    link.symlink_to(sets / wanted)
    assert verify_cache_set(plan, state) == []
    (sets / wanted / "bdev0").symlink_to(backing / "bcache")  # the set's own link to this device
    assert verify_cache_set(plan, state) == []
    other = tmp_path / "sdx" / "bcache"
    other.mkdir(parents=True)
    (sets / wanted / "bdev1").symlink_to(other)  # a disk that joined the set after planning
    assert [p.sentence() for p in verify_cache_set(plan, state)] == [
        f"the plan stops the cache set {wanted}, which also caches sdx now (a disk joined it since the plan was "
        "made); make the plan again"]
    for n in ("bdev0", "bdev1"):
        (sets / wanted / n).unlink()
    link.unlink()
    link.symlink_to(sets / "9d0e5a8e-0000-4000-8000-000000000001")
    assert [p.sentence() for p in verify_cache_set(plan, state)] == [
        f"the plan stops the cache set {wanted}, but its backing device is attached to the cache set "
        "9d0e5a8e-0000-4000-8000-000000000001"]
    link.unlink()
    assert [p.sentence() for p in verify_cache_set(plan, state)] == [
        f"the plan stops the cache set {wanted}, but its backing device is not attached to any"]
    (backing / "bcache" / "state").write_text("no cache\n")
    (sets / wanted).rmdir()
    assert verify_cache_set(plan, state) == [], "a removal found wholly in effect runs nothing and is let be"
    # a disk joining the set stops none: its backing device is attached to no set before it runs
    from recipes.bcache import bcache_join

    join = bcache_join(build_inventory(RawSystem.load(RAW)), "/dev/sda", "/dev/sde")
    assert verify_cache_set(join, Here(plan=join)) == []


@case("links")
def test_a_lock_planted_as_a_link_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    from advisor.apply.journal import JournalError, locked

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (tmp_path / "victim").write_text("keep")
    (state / "apply.lock").symlink_to(tmp_path / "victim")
    with pytest.raises(JournalError, match="the lock .* cannot be opened"), locked(state):
        pass
    assert (tmp_path / "victim").read_text() == "keep"


@case("links")
def test_the_machine_lock_planted_as_a_link_is_replaced_and_its_target_kept(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """/run/lock is everyone's: a link planted as the lock is removed (as root may), never followed."""
    from advisor.apply import journal

    (tmp_path / "victim").write_text("keep")
    lock = tmp_path / "cachewise-apply.lock"
    lock.symlink_to(tmp_path / "victim")
    monkeypatch.setattr(journal, "MACHINE_LOCK", lock)
    with journal.locked(tmp_path / "state"):
        assert not lock.is_symlink() and lock.is_file()
    assert (tmp_path / "victim").read_text() == "keep"


@case("links")
def test_a_lock_another_user_made_cannot_keep_root_from_applying(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if not ROOT:
        pytest.skip("needs root to give a file away")
    from advisor.apply import journal

    lock = tmp_path / "cachewise-apply.lock"
    lock.write_text("")
    os.chown(lock, NOBODY, -1)
    monkeypatch.setattr(journal, "MACHINE_LOCK", lock)
    with journal.locked(tmp_path / "state"):
        assert lock.stat().st_uid == 0


@case("links")
def test_two_applies_with_different_state_directories_exclude_each_other(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.apply import journal

    monkeypatch.setattr(journal, "MACHINE_LOCK", tmp_path / "cachewise-apply.lock")
    with journal.locked(tmp_path / "a"), pytest.raises(journal.Busy, match="on this machine"), \
            journal.locked(tmp_path / "b"):
        pass


@case("path")
def test_root_finds_programs_only_in_the_system_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.runner import SYSTEM_DIRS, CommandRunner

    _plant(tmp_path, ("blkid",))
    monkeypatch.setenv("PATH", f"{tmp_path}:.:/usr/bin:/bin")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    found = CommandRunner().which("blkid")
    assert found is None or os.path.dirname(found) in SYSTEM_DIRS
    assert CommandRunner().env()["PATH"] == ":".join(SYSTEM_DIRS)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert CommandRunner().which("blkid") == str(tmp_path / "blkid"), "a user's own PATH is theirs"


@case("path")
def test_root_does_not_run_a_program_others_can_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor import runner
    from advisor.runner import CommandRunner, ToolUntrusted

    bin_dir = tmp_path / "sbin"
    _plant(bin_dir, ("lvs",))
    bin_dir.chmod(0o777)
    monkeypatch.setattr(runner, "SYSTEM_DIRS", (str(bin_dir),))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    with pytest.raises(ToolUntrusted, match="other users can write to"):
        CommandRunner().run(["lvs"])
    assert not (bin_dir / "RAN-lvs").exists()


@case("path")
def test_root_does_not_run_a_program_another_user_owns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not ROOT:
        pytest.skip("needs root to give a file away")
    from advisor import runner
    from advisor.runner import CommandRunner, ToolUntrusted

    bin_dir = tmp_path / "sbin"
    _plant(bin_dir, ("pvs",))
    os.chown(bin_dir / "pvs", NOBODY, -1)
    monkeypatch.setattr(runner, "SYSTEM_DIRS", (str(bin_dir),))
    with pytest.raises(ToolUntrusted, match="does not belong to root"):
        CommandRunner().run(["pvs"])
    assert not (bin_dir / "RAN-pvs").exists()


@case("path")
def test_root_passes_no_loader_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.runner import CommandRunner

    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/tmp")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    env = CommandRunner().env()
    assert "LD_PRELOAD" not in env and "LD_LIBRARY_PATH" not in env


@case("path")
def test_a_program_that_cannot_start_is_a_sentence(tmp_path: Path) -> None:
    from advisor.runner import CommandError, CommandRunner

    (tmp_path / "fio").write_text("#!/nonexistent/interpreter\n")
    (tmp_path / "fio").chmod(0o755)
    with pytest.raises(CommandError, match="could not run: No such file or directory"):
        CommandRunner(tool_dirs=(str(tmp_path),)).run(["fio", "--version"])


class _FillingOs:
    """The os module as ``module`` sees it, but for a disk that is full after ``budget`` bytes."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        if self.left <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = os.write(fd, bytes(data)[: self.left])
        self.left -= n
        return n


def _enospc_after(monkeypatch: pytest.MonkeyPatch, module: Any, budget: int) -> None:
    """Writes through ``module``'s os.write fail once ``budget`` bytes went: a disk that fills."""
    monkeypatch.setattr(module, "os", _FillingOs(budget))


@case("full")
def test_outputs_are_never_writable_by_others_whatever_the_umask(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "cachewise", *PLAN, "-o", str(tmp_path / "p.json")],
                          capture_output=True, text=True, timeout=60, check=False, preexec_fn=lambda: os.umask(0),  # noqa: PLW1509
                          env={**os.environ, "CACHEWISE_STATE_DIR": str(tmp_path / "state")})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "p.json").stat().st_mode & 0o777 == 0o644


@case("full")
def test_a_plan_on_a_full_disk_leaves_no_file_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from advisor import outputs
    from cachewise.cli import main

    _enospc_after(monkeypatch, outputs, 100)
    assert main([*PLAN, "--format", "ansible", "-o", str(tmp_path / "p.yml")]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == [], "neither the playbook nor its temporary file is left"


@case("full")
def test_a_snapshot_on_a_full_disk_leaves_no_file_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor import outputs
    from cachewise.core.context import Refused
    from cachewise.core.files import write_new

    _enospc_after(monkeypatch, outputs, 10)
    with pytest.raises(Refused, match="No space left on device"):
        write_new(tmp_path / "raw.json", "x" * 100_000, "nothing was saved")
    assert list(tmp_path.iterdir()) == []


@case("full")
def test_a_textfile_on_a_full_disk_keeps_the_last_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor import outputs
    from advisor.watch.textfile import MARKER, write_textfile

    path = tmp_path / "c.prom"
    write_textfile(path, MARKER + "old 1\n")
    _enospc_after(monkeypatch, outputs, 10)
    with pytest.raises(OSError, match="No space"):
        write_textfile(path, MARKER + "new 2\n" * 1000)
    assert path.read_text() == MARKER + "old 1\n" and [p.name for p in tmp_path.iterdir()] == ["c.prom"]


@case("full")
def test_a_journal_on_a_full_disk_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.apply import journal
    from advisor.apply.journal import Journal, JournalError
    from advisor.plan.model import Plan

    j = Journal.create(tmp_path / "state", Plan.from_json(plan_json()))
    _enospc_after(monkeypatch, journal, 0)
    with pytest.raises(JournalError, match="cannot be written \\(No space left on device\\)"):
        j.write("step-begin", step="pvcreate")


@case("full")
def test_a_full_disk_under_the_history_is_told_apart(tmp_path: Path) -> None:
    from advisor.history import _trouble

    said = _trouble(tmp_path / "h", sqlite3.OperationalError("database or disk is full"))
    assert "is full" in said.what and said.next[0].action == "free-space"


@case("fifo")
def test_a_fifo_among_the_journals_does_not_stop_the_start(tmp_path: Path) -> None:
    from advisor.apply.journal import unfinished_journals

    journal_with(fifo_name="20260101T000000-x.jsonl")(tmp_path)
    start = time.monotonic()
    pending = unfinished_journals(tmp_path / "state")
    assert len(pending) == 1 and "it is a FIFO" in (pending[0].problem() or "")
    assert time.monotonic() - start < 5


@case("fifo")
def test_a_replay_result_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    from cachewise.core.context import Refused
    from cachewise.core.workload import load_replay_result

    os.mkfifo(tmp_path / "r.json")
    with pytest.raises(Refused, match="it is a FIFO"):
        load_replay_result(tmp_path / "r.json")


@case("deep")
def test_a_replay_result_nested_deep_is_refused(tmp_path: Path) -> None:
    from cachewise.core.context import Refused
    from cachewise.core.workload import load_replay_result

    deep("r.json")(tmp_path)
    with pytest.raises(Refused, match="nests"):
        load_replay_result(tmp_path / "r.json")


@case("deep")
def test_a_history_row_nested_deep_is_left_out(tmp_path: Path) -> None:
    from advisor.history import History

    _history(tmp_path / "st", "INSERT INTO samples (target, t, sample_json) VALUES ('x', 1, '" + "[" * 100_000
             + "]" * 100_000 + "')")
    with History(tmp_path / "st" / "history.sqlite3") as h:
        assert h.samples("x") == []


@case("history")
def test_a_history_another_program_holds_is_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor import history
    from advisor.history import History, HistoryError

    monkeypatch.setattr(history, "BUSY_SECONDS", 0.2)
    state = tmp_path / "st"
    _history(state)
    holder = sqlite3.connect(state / "history.sqlite3")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        start = time.monotonic()
        with pytest.raises(HistoryError, match="in use by another program"), History(state / "history.sqlite3") as h:
            h.snapshots()
        assert time.monotonic() - start < 5
    finally:
        holder.rollback()
        holder.close()


@case("history")
def test_two_first_starts_at_once_migrate_once(tmp_path: Path) -> None:
    from advisor.history import MIGRATIONS, History

    state = tmp_path / "st"
    state.mkdir(mode=0o700)
    errors: list[BaseException] = []

    def start() -> None:
        try:
            History(state / "history.sqlite3").close()
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with History(state / "history.sqlite3") as h:
        assert h.version == len(MIGRATIONS)


@case("history")
def test_rows_another_version_wrote_are_left_out(tmp_path: Path) -> None:
    from advisor.history import History

    _history(tmp_path / "st",
             "INSERT INTO samples (target, t, sample_json) VALUES ('x', 1, '{\"t\": 1, \"warp\": 9, \"device_io\": {\"x\": 1}}')",
             "INSERT INTO samples (target, t, sample_json) VALUES ('x', 2, 'not json')",
             "INSERT INTO caches (target, made_at, plan_kind, prediction_json) VALUES ('x', 1, 'k', '{\"new\": 1}')")
    with History(tmp_path / "st" / "history.sqlite3") as h:
        assert h.samples("x") == []
        assert h.made_caches() == [("x", 1.0, None)]


@case("history")
def test_a_probe_another_version_recorded_is_measured_again(tmp_path: Path) -> None:
    from advisor.disks.collect import RawSystem
    from cachewise.core import Core
    from cachewise.core.discover import earlier_probes

    inv_dev = json.loads(RAW.read_text())
    _history(tmp_path / "st", "INSERT INTO probes (taken_at, identity, size_bytes, device, device_class, confidence, "
             "complete, fio_version, result_json, fio_json) VALUES ('t', 'serial:NVME0001', 1073741824, 'nvme0n1', "
             "'nvme', 'high', 1, 'fio-9', '{\"from\": \"the future\"}', '{}')")
    core = Core.for_snapshot(RawSystem.from_json(inv_dev), tmp_path / "st")
    from cachewise.core.discover import scan

    inv = scan(core)
    found, warning = earlier_probes(core, inv)
    assert found == {} and warning is None
    # The control: a probe this version recorded, of another disk of the snapshot, is found.
    from advisor.disks.probe import ProbeResult, classify, parse_fio
    from advisor.history import History

    ssd = next(d for d in inv.devices if d.identity == "serial:SSD0001")
    fio = json.loads((FIXTURES / "lab-probe" / "fio-SSD0001.json").read_text())
    got = parse_fio(fio)
    result = ProbeResult(ssd.name, ssd.devnode, ssd.identity, ssd.size_bytes, False, "sata", tuple(got),
                         classify(got, False, "sata"), False, True, 7.1, "fio-3.33", (), fio)
    with History(tmp_path / "st" / "history.sqlite3") as h:
        h.record_probe(result, "SSD0001", None)
    found, warning = earlier_probes(core, inv)
    assert list(found) == [ssd.identity] and warning is None


@case("history")
def test_a_number_too_large_for_sqlite_is_a_sentence(tmp_path: Path) -> None:
    from advisor.history import History, HistoryError

    _history(tmp_path / "st")
    with History(tmp_path / "st" / "history.sqlite3") as h, pytest.raises(HistoryError, match="too large"):
        h.record_cache("x", "k", None, 2**70)


@case("terminal")
def test_an_ascii_terminal_gets_the_table_without_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "CACHEWISE_STATE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "cachewise", "scan", "--from-raw", str(RAW)], capture_output=True,
                          text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "Block devices" in proc.stdout


@case("terminal")
def test_the_tui_needs_its_input_from_a_terminal_too(tmp_path: Path) -> None:
    import pty

    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "cachewise", "tui"], stdin=subprocess.DEVNULL, stdout=secondary,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                              env={**os.environ, "CACHEWISE_STATE_DIR": str(tmp_path)})
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 1 and "needs a terminal for its input and its output" in proc.stderr


def test_every_class_has_at_least_five_cases_and_sixty_in_all() -> None:
    counts = {c: 0 for c in CLASSES}
    for c in CLI_CASES:
        counts[c.cls] += 1
    for _, cls in IN_PROCESS:
        counts[cls] += 1
    assert all(n >= 5 for n in counts.values()), counts
    assert sum(counts.values()) >= 60, counts


@case("plan")
def test_a_device_udev_calls_blank_is_asked_again_before_it_is_overwritten() -> None:
    """udev's database can miss a file system made a moment ago (in the lab it never saw mkfs on
    an LV): apply asks blkid itself about each device the plan overwrites that discovery calls
    blank, and refuses when blkid finds something the plan did not know of."""
    from advisor.apply.preflight import verify_devices
    from advisor.plan.model import Plan
    from advisor.runner import CommandResult
    from tests.unit.test_execute import FakeLvm

    plan = Plan.from_json(plan_json())
    state = FakeLvm().state()
    real = state.device
    blank = next(b for b in plan.devices if b.path in plan.destroyed_devices() and not b.signature)
    state.device = lambda path: dataclasses.replace(real(path), fs_type=None) if path == blank.path else real(path)  # type: ignore[method-assign,misc]
    asked: list[list[str]] = []

    class Blkid:
        def __init__(self, out: str, code: int) -> None:
            self.out, self.code = out, code

        def which(self, tool: str) -> str | None:
            return f"/usr/sbin/{tool}" if tool == "blkid" else None

        def run(self, argv: list[str], **_kw: object) -> CommandResult:
            asked.append(argv)
            return CommandResult(tuple(argv), self.code, self.out, "", 0.01)

    state.runner = Blkid("DEVNAME=/dev/x\nUUID=1234\nTYPE=ext4\n", 0)  # type: ignore[assignment]
    problems = [p.sentence() for p in verify_devices(plan, state)]
    assert asked and asked[0][:3] == ["blkid", "-p", "-o"], asked
    assert any("now holds ext4, which the plan would destroy but did not know of" in p for p in problems), problems
    state.runner = Blkid("", 2)  # type: ignore[assignment]  # blkid: nothing found
    assert verify_devices(plan, state) == []
    # A new, empty partition: blkid -p names only its entry in the disk's table, and exits 0
    # (tests/fixtures/blkid/empty-partition.txt, captured in the lab guest).
    state.runner = Blkid((FIXTURES / "blkid" / "empty-partition.txt").read_text(), 0)  # type: ignore[assignment]
    assert verify_devices(plan, state) == []
    # ... and one that holds something blkid recognises but cannot name as a type
    state.runner = Blkid("DEVNAME=/dev/sdb1\nPART_ENTRY_SCHEME=dos\nUUID_SUB=5\n", 0)  # type: ignore[assignment]
    assert any("a signature blkid found" in p.sentence() for p in verify_devices(plan, state))
    assert verify_devices(plan, state, resuming=True) == []
    # several signatures (exit 8), a usage error (4): not blank, whatever udev says
    for code, words in ((8, "several signatures"), (4, "blkid exit 4")):
        state.runner = Blkid("", code)  # type: ignore[assignment]
        problems = [p.sentence() for p in verify_devices(plan, state)]
        assert any(words in p and "would destroy" in p for p in problems), (code, problems)
