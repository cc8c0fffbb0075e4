"""Bad inputs, table-driven, across every subcommand: each is refused with its exit code and a
sentence that names the problem, and never with a traceback. Plan and journal tampering must be
named as such, not reported as "the devices changed". Cases that reach the live system are
refused before they touch it (the lab repeats the dangerous ones with disks hashed:
tests/lab/test_apply_lab.py). The TUI's inputs are at the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select, Static

from cachewise.cli import main
from tests.conftest import FIXTURES, LAB_SCAN

RAW = str(LAB_SCAN / "raw-udev.json")
TRACE = str(FIXTURES / "traces" / "fio-v3.iolog")
NVME = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001"


@dataclass
class Case:
    name: str
    argv: list[str]  # "{tmp}" stands for the case's own folder
    message: str  # what the refusal must say
    code: int = 1
    setup: Callable[[Path], None] | None = None
    root: bool = False  # run as if root (apply refuses non-root before anything else)
    env: dict[str, str] = field(default_factory=dict)


def good_plan() -> dict[str, Any]:
    """A real lvmcache-attach plan for the lab snapshot."""
    from advisor.disks.collect import RawSystem
    from advisor.disks.discovery import build_inventory
    from recipes.lvmcache import CacheSpec, lvmcache_attach

    inv = build_inventory(RawSystem.load(Path(RAW)))
    return lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 << 20)).to_json()


def plan_file(change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    """A setup writing {tmp}/plan.json: the good plan with ``change`` made to it."""
    def setup(tmp: Path) -> None:
        data = json.loads(json.dumps(good_plan()))
        change(data)
        (tmp / "plan.json").write_text(json.dumps(data))
    return setup


def step0(data: dict[str, Any]) -> dict[str, Any]:
    return data["steps"][0]  # type: ignore[no-any-return]


def text_file(name: str, content: str | bytes) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return setup


def journal(records: str | bytes, directory: bool = False) -> Callable[[Path], None]:
    """A setup leaving an unfinished (or damaged) journal in {tmp}/state/journal."""
    def setup(tmp: Path) -> None:
        d = tmp / "state" / "journal"
        d.mkdir(parents=True)
        if directory:
            (d / "20260101T000000-x.jsonl").mkdir()
            return
        (d / "20260101T000000-x.jsonl").write_bytes(records if isinstance(records, bytes) else records.encode())
        plan_file(lambda p: None)(tmp)
    return setup


def both(*setups: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        for s in setups:
            s(tmp)
    return setup


def dangling(name: str) -> Callable[[Path], None]:
    def setup(tmp: Path) -> None:
        (tmp / name).symlink_to(tmp / "nowhere" / "target")
    return setup


PLAN = ["plan", "lvmcache-attach", "--from-raw", RAW, "--lv", "labvg/data", "--ssd", "nvme0n1"]
REC = ["recommend", "--from-raw", RAW, "--slow", "sda", "--fast", "nvme0n1"]
APPLY = ["--state-dir", "{tmp}/state", "apply", "{tmp}/plan.json", "--yes"]
JOURNAL_PLAN = '{"event": "plan", "plan": ' + "{}" + '}\n'

CASES = [
    # scan
    Case("scan-raw-missing", ["scan", "--from-raw", "{tmp}/none.json"], "cannot read the raw snapshot"),
    Case("scan-raw-garbage", ["scan", "--from-raw", "{tmp}/g.json"], "cannot read the raw snapshot",
         setup=text_file("g.json", "\x00\x01garbage")),
    Case("scan-raw-list", ["scan", "--from-raw", "{tmp}/l.json"], "cannot read the raw snapshot",
         setup=text_file("l.json", "[1, 2]")),
    Case("scan-raw-schema", ["scan", "--from-raw", "{tmp}/s.json"], "not a cachewise raw snapshot",
         setup=text_file("s.json", '{"schema": "other/9"}')),
    Case("scan-save-raw-no-folder", ["scan", "--save-raw", "{tmp}/no/such/raw.json"], "does not exist"),
    Case("scan-save-raw-exists", ["scan", "--save-raw", "{tmp}/e.json"], "already exists",
         setup=text_file("e.json", "x")),
    Case("scan-save-raw-dangling", ["scan", "--save-raw", "{tmp}/d.json"], "is a link", setup=dangling("d.json")),
    # probe
    Case("probe-missing", ["probe", "/dev/nonexistent-disk"], "does not exist; nothing was probed"),
    Case("probe-not-block", ["probe", "/etc/hostname"], "is not a block device"),
    Case("probe-char-device", ["probe", "/dev/null"], "is not a block device"),
    Case("probe-twice", ["probe", "/dev/x", "/dev/x"], "the same device is named twice"),
    Case("probe-seconds-zero", ["probe", "--seconds", "0", "/dev/x"], "--seconds must be between 0.5 and 60"),
    Case("probe-seconds-nan", ["probe", "--seconds", "nan", "/dev/x"], "--seconds must be between 0.5 and 60"),
    Case("probe-seconds-inf", ["probe", "--seconds", "inf", "/dev/x"], "--seconds must be between 0.5 and 60"),
    Case("probe-seconds-text", ["probe", "--seconds", "ten", "/dev/x"], "invalid float value", code=2),
    # trace
    Case("trace-duration-zero", ["trace", "/dev/x", "--duration", "0", "-o", "{tmp}/t"], "not a duration"),
    Case("trace-duration-negative", ["trace", "/dev/x", "--duration=-5s", "-o", "{tmp}/t"], "not a duration"),
    Case("trace-duration-unit", ["trace", "/dev/x", "--duration", "10x", "-o", "{tmp}/t"], "not a duration"),
    Case("trace-duration-huge", ["trace", "/dev/x", "--duration", "99999h", "-o", "{tmp}/t"], "longer than 31 days"),
    Case("trace-output-exists", ["trace", "/dev/x", "--duration", "1s", "-o", "{tmp}/t"], "already exists",
         setup=text_file("t", "x"), root=True),
    Case("trace-output-no-folder", ["trace", "/dev/x", "--duration", "1s", "-o", "{tmp}/no/t"], "does not exist",
         root=True),
    Case("trace-output-dangling", ["trace", "/dev/x", "--duration", "1s", "-o", "{tmp}/t"], "is a link",
         setup=dangling("t"), root=True),
    Case("trace-not-root", ["trace", "/dev/x", "--duration", "1s", "-o", "{tmp}/t"], "needs root"),
    # analyze
    Case("analyze-missing", ["analyze", "{tmp}/none"], "is not a readable file; nothing was analysed."),
    Case("analyze-directory", ["analyze", "{tmp}"], "is a folder with no capture files in it (give a trace file, or a "
         "capture's folder); nothing was analysed"),
    Case("analyze-empty", ["analyze", "{tmp}/e"], "not a trace cachewise knows", setup=text_file("e", "")),
    Case("capture-show-empty-folder", ["capture", "show", "{tmp}"], "is a folder with no capture files in it"),
    Case("capture-show-random-bytes", ["capture", "show", "{tmp}/capture-20260101T000000Z.cwcap"],
         "is not a cachewise capture file (bad header); nothing was read",
         setup=text_file("capture-20260101T000000Z.cwcap", bytes(range(256)) * 4)),
    Case("capture-show-two-devices", ["capture", "show", "{tmp}/c"], "are of 2 devices",
         setup=lambda tmp: [text_file(f"c/capture-2026010{i}T000000Z.cwcap",
                                      f'CACHEWISE-CAPTURE 1\n{{"device": "wwn:{i}"}}\n')(tmp) for i in (1, 2)]),
    Case("analyze-capture-newer-version", ["analyze", "{tmp}/c"], "format version '2'; this cachewise reads version 1",
         setup=text_file("c/capture-20260101T000000Z.cwcap", 'CACHEWISE-CAPTURE 2\n{}\n')),
    Case("capture-export-odd-block", ["capture", "export", "{tmp}", "-o", "{tmp}/x", "--block-size", "3000"],
         "must be a power of two"),
    Case("analyze-random-bytes", ["analyze", "{tmp}/r"], "Name the format with --format",
         setup=text_file("r", bytes(range(256)) * 4)),
    Case("analyze-block-size-3k", ["analyze", "--block-size", "3k", TRACE], "block size must be a power of two"),
    Case("analyze-block-size-zero", ["analyze", "--block-size", "0", TRACE], "is zero"),
    Case("analyze-block-size-text", ["analyze", "--block-size", "big", TRACE], "not a size"),
    Case("analyze-wrong-format", ["analyze", "--format", "fio", "{tmp}/c.csv"], "not a fio iolog",
         setup=text_file("c.csv", "1,h,0,Read,0,4096,1\n")),
    Case("analyze-csv-columns", ["analyze", "--csv-columns", "time=x", "{tmp}/c.csv"], "bad --csv-columns",
         setup=text_file("c.csv", "1,h,0,Read,0,4096,1\n")),
    Case("analyze-csv-unit", ["analyze", "--csv-time-unit", "days", TRACE], "invalid choice", code=2),
    Case("analyze-cutoff-not-a-size", ["analyze", "--sequential-cutoff", "lots", TRACE], "not a size: 'lots'"),
    Case("analyze-cutoff-negative", ["analyze", "--sequential-cutoff", "-1", TRACE], "not a size: '-1'"),
    Case("analyze-only-bad-lines", ["analyze", "{tmp}/b.iolog"], "holds no read or write requests",
         setup=text_file("b.iolog", "fio version 2 iolog\n/dev/sdb read -4 4096\n/dev/sdb read 0 99999999999\n")),
    Case("analyze-nul-csv", ["analyze", "--format", "csv", "{tmp}/n.csv"], "holds no read or write requests",
         setup=text_file("n.csv", "1,h,0,Read,\x00,4096\n")),
    Case("analyze-huge-offset", ["analyze", "{tmp}/o.iolog"], "holds no read or write requests",
         setup=text_file("o.iolog", f"fio version 2 iolog\n/dev/sdb read {2**64 - 1} 4096\n")),
    Case("analyze-nan-time", ["analyze", "--format", "csv", "--csv-columns", "time=0,op=1,offset=2,size=3", "{tmp}/t.csv"],
         "holds no read or write requests", setup=text_file("t.csv", "nan,Read,0,4096\n")),
    Case("analyze-native-version", ["analyze", "{tmp}/v.cwtrace"], "format version '2'",
         setup=text_file("v.cwtrace", b"CACHEWISE-TRACE 2\n{}\n")),
    Case("analyze-native-header", ["analyze", "{tmp}/h.cwtrace"], "has a corrupt header",
         setup=text_file("h.cwtrace", b"CACHEWISE-TRACE 1\n[1]\n")),
    # recommend
    Case("recommend-missing-slow", ["recommend", "--from-raw", RAW, "--slow", "/dev/nope", "--fast", "nvme0n1",
                                    "--workload", "database"], "/dev/nope is not a block device on this machine"),
    Case("recommend-twice", ["recommend", "--from-raw", RAW, "--slow", "sda", "--fast", "sda", "--workload",
                             "database"], "the same device is named twice"),
    Case("recommend-no-workload", REC, "--workload TYPE"),
    Case("recommend-workload-bogus", [*REC, "--workload", "bogus"], "invalid choice", code=2),
    Case("recommend-hot-zero", [*REC, "--hot-fraction", "0"], "must be a number above zero", code=2),
    Case("recommend-hot-nan", [*REC, "--hot-fraction", "nan"], "must be a number above zero", code=2),
    Case("recommend-hot-two", [*REC, "--hot-fraction", "2"], "--hot-fraction must be between 0 and 1"),
    Case("recommend-read-share-negative", [*REC, "--read-share", "-1", "--workload", "database"],
         "must be a number above zero", code=2),
    Case("recommend-read-iops-negative", [*REC, "--read-iops", "-5", "--workload", "database"],
         "must be a number above zero", code=2),
    Case("recommend-data-size-zero", [*REC, "--data-size", "0", "--workload", "database"], "--data-size: a size of 0"),
    Case("recommend-data-size-huge", [*REC, "--data-size", "99999999999t", "--workload", "database"], "too large"),
    Case("recommend-cache-size-zero", [*REC, "--cache-size", "0", "--workload", "database"], "--cache-size: a size"),
    Case("recommend-trace-missing", [*REC, "--trace", "{tmp}/none"], "cannot analyse"),
    Case("recommend-trace-garbage", [*REC, "--trace", "{tmp}/g"], "cannot analyse",
         setup=text_file("g", "\x00garbage")),
    # plan
    Case("plan-no-lv", [*PLAN[:4], "--lv", "vg/none", "--ssd", "nvme0n1", "--size", "256m"], "is not a logical volume"),
    Case("plan-lv-metachar", [*PLAN[:4], "--lv", "labvg/data;reboot", "--ssd", "nvme0n1", "--size", "256m"],
         "is not a logical volume"),
    Case("plan-ssd-missing", [*PLAN[:6], "--ssd", "/dev/nope", "--size", "256m"], "is not a block device"),
    Case("plan-ssd-is-origin", [*PLAN[:6], "--ssd", "/dev/labvg/data", "--size", "256m"], "is the slow device itself"),
    Case("plan-size-zero", [*PLAN, "--size", "0"], "--size: a size of 0 is zero"),
    Case("plan-size-text", [*PLAN, "--size", "12q"], "not a size"),
    Case("plan-size-huge", [*PLAN, "--size", "99999999t"], "too large"),
    Case("plan-size-too-big-for-ssd", [*PLAN, "--size", "40g"], "is too small"),
    Case("plan-chunk-48k", [*PLAN, "--size", "256m", "--chunk", "48k"], "not a multiple of 32 KiB"),
    Case("plan-metadata-zero", [*PLAN, "--size", "256m", "--metadata", "0"], "--metadata: a size of 0 is zero"),
    Case("plan-no-size", PLAN, "Give the cache size"),
    Case("plan-recommendation-missing", [*PLAN, "--recommendation", "{tmp}/none.json"], "cannot read the recommendation"),
    Case("plan-recommendation-garbage", [*PLAN, "--recommendation", "{tmp}/g.json"], "cannot read the recommendation",
         setup=text_file("g.json", "{")),
    Case("plan-recommendation-dont-cache", [*PLAN, "--recommendation", "{tmp}/n.json"], "is not an lvmcache",
         setup=text_file("n.json", '{"config": null}')),
    Case("plan-output-exists", [*PLAN, "--size", "256m", "-o", "{tmp}/p.json"], "already exists",
         setup=text_file("p.json", "{}")),
    Case("plan-output-no-folder", [*PLAN, "--size", "256m", "-o", "{tmp}/no/p.json"], "does not exist"),
    Case("plan-output-dangling", [*PLAN, "--size", "256m", "-o", "{tmp}/p.json"], "is a link", setup=dangling("p.json")),
    Case("plan-json-and-ansible", [*PLAN, "--size", "256m", "--json", "--format", "ansible"], "two different outputs"),
    Case("plan-bcache-cutoff-huge", ["plan", "bcache-create", "--from-raw", RAW, "--backing", "sdg", "--cache",
                                     "nvme0n1", "--sequential-cutoff", "8g"], "too large"),
    Case("plan-bcache-writeback-percent", ["plan", "bcache-create", "--from-raw", RAW, "--backing", "sdg", "--cache",
                                           "nvme0n1", "--writeback-percent", "99"], "writeback_percent must be 0 to 40"),
    Case("plan-uncache-not-cached", ["plan", "lvmcache-uncache", "--from-raw", RAW, "--lv", "labvg/data"],
         "is not cached"),
    Case("plan-mode-not-cached", ["plan", "lvmcache-mode", "--from-raw", RAW, "--lv", "labvg/data", "--mode",
                                  "writeback"], "is not cached"),
    Case("plan-new-bad-vg-name", ["plan", "lvmcache-new", "--from-raw", RAW, "--hdd", "sdg", "--ssd", "nvme0n1",
                                  "--vg", "bad name", "--lv", "d", "--size", "1g"], "has characters lvm2 does not allow"),
    Case("plan-detach-not-bcache", ["plan", "bcache-detach", "--from-raw", RAW, "--device", "nvme0n1"],
         "is not a bcache device"),
    # apply: plan files
    Case("apply-missing", ["--state-dir", "{tmp}/state", "apply", "{tmp}/none.json", "--yes"], "cannot read the plan",
         root=True),
    Case("apply-directory", ["--state-dir", "{tmp}/state", "apply", "{tmp}", "--yes"], "cannot read the plan", root=True),
    Case("apply-not-json", APPLY, "not valid JSON", setup=text_file("plan.json", "\x00 not a plan"), root=True),
    Case("apply-newer-schema", APPLY, "newer than this cachewise understands",
         setup=plan_file(lambda p: p.update(schema="cachewise.plan/2")), root=True),
    Case("apply-no-steps-key", APPLY, "is incomplete or damaged", setup=plan_file(lambda p: p.pop("steps")), root=True),
    Case("apply-unknown-key", APPLY, "unknown field 'run_this'",
         setup=plan_file(lambda p: step0(p).update(run_this="rm -rf /")), root=True),
    Case("apply-wrong-type", APPLY, "expected a whole number",
         setup=plan_file(lambda p: p["devices"][0].update(size_bytes="big")), root=True),
    Case("apply-rm-rf", APPLY, "rm is not a program cachewise plans run",
         setup=plan_file(lambda p: step0(p).update(argv=["rm", "-rf", "/"])), root=True),
    Case("apply-sh-c", APPLY, "sh is not a program cachewise plans run",
         setup=plan_file(lambda p: step0(p).update(argv=["sh", "-c", "reboot"])), root=True),
    Case("apply-argv-string", APPLY, "expected a list",
         setup=plan_file(lambda p: step0(p).update(argv="pvcreate --yes /dev/sda")), root=True),
    Case("apply-program-path", APPLY, "names a program by path",
         setup=plan_file(lambda p: step0(p).update(argv=["/tmp/evil/pvcreate", "--yes", NVME])), root=True),
    Case("apply-extra-argument", APPLY, "is not a pvcreate command a cachewise recipe writes",
         setup=plan_file(lambda p: step0(p).update(argv=["pvcreate", "--yes", "--force", "--force", NVME])), root=True),
    Case("apply-unbound-device", APPLY, "names a device the plan is not bound to",
         setup=plan_file(lambda p: step0(p).update(argv=["pvcreate", "--yes", "/dev/sda"])), root=True),
    Case("apply-undo-other-program", APPLY, "its undo command is refused",
         setup=plan_file(lambda p: step0(p).update(undo=[["dd", "if=/dev/zero", f"of={NVME}"]])), root=True),
    Case("apply-zero-steps", APPLY, "has no steps", setup=plan_file(lambda p: p.update(steps=[])), root=True),
    Case("apply-duplicate-steps", APPLY, "has the step 'pvcreate' twice",
         setup=plan_file(lambda p: p["steps"].append(p["steps"][0])), root=True),
    Case("apply-null-identity", APPLY, "has no identity",
         setup=plan_file(lambda p: p["devices"][1].update(identity=None)), root=True),
    Case("apply-unstable-path", APPLY, "is not a stable device path",
         setup=plan_file(lambda p: p["devices"][1].update(path="/dev/sdb")), root=True),
    Case("apply-sysfs-write", APPLY, "which is not one of the bcache files plans write",
         setup=plan_file(lambda p: step0(p).update(argv=[], write=["/sys/fs/bcache/../../../etc/passwd", "x"])),
         root=True),
    Case("apply-sysfs-write-foreign-device", APPLY, "takes no such value in a lvmcache-attach plan",
         setup=plan_file(lambda p: step0(p).update(argv=[], write=["/sys/fs/bcache/register_quiet", "/dev/sda"])),
         root=True),
    Case("apply-unknown-check", APPLY, "unknown check 'rm_rf'",
         setup=plan_file(lambda p: step0(p)["post"][0].update(kind="rm_rf")), root=True),
    Case("apply-check-outside-sysfs", APPLY, "only look at bcache's sysfs files",
         setup=plan_file(lambda p: step0(p)["post"].append({"kind": "sysfs_exists", "args": {"path": "/etc/shadow"}})),
         root=True),
    Case("apply-kind", APPLY, "none of cachewise's recipes", setup=plan_file(lambda p: p.update(kind="format-disk")),
         root=True),
    Case("apply-not-root", APPLY, "needs root; run it with sudo", setup=plan_file(lambda p: None)),
    Case("apply-nothing-to-resume", ["--state-dir", "{tmp}/state", "apply", "--resume", "--yes"],
         "no interrupted plan to resume", root=True),
    # apply: journals
    Case("journal-no-plan-record", APPLY, "its first record is not the plan it ran",
         setup=journal('{"event": "step-end", "step": "x"}\n'), root=True),
    Case("journal-foreign-plan", APPLY, "holds a plan that is refused",
         setup=journal(JOURNAL_PLAN.replace("{}", '{"schema": "cachewise.plan/9"}')), root=True),
    Case("journal-empty-records", APPLY, "its first record is not the plan it ran", setup=journal("{}\n[]\n"),
         root=True),
    Case("journal-not-text", APPLY, "cannot be read", setup=journal(b"\xff\xfe\x00garbage"), root=True),
    Case("journal-directory", APPLY, "cannot be read", setup=journal("", directory=True), root=True),
    Case("journal-resume-damaged", ["--state-dir", "{tmp}/state", "apply", "--resume", "--yes"], "--abandon",
         setup=journal("{}\n"), root=True),
    Case("journal-abandon-outside", ["--state-dir", "{tmp}/state", "apply", "--abandon", "{tmp}/plan.json"],
         "is not a journal in", setup=plan_file(lambda p: None), root=True),
    # history
    Case("history-limit-zero", ["--state-dir", "{tmp}", "history", "--limit", "0"], "whole number from 1", code=2),
    Case("history-state-is-file", ["--state-dir", "{tmp}/f/x", "history"], "cannot open the history database",
         setup=text_file("f", "x")),
    Case("history-foreign-database", ["--state-dir", "{tmp}", "history"], "is not a usable cachewise history",
         setup=text_file("history.sqlite3", "not a database at all" * 100)),
    # the terminal UI
    Case("tui-no-terminal", ["tui"], "needs a terminal"),
]


def test_there_are_at_least_eighty_cases() -> None:
    assert len(CASES) >= 80 and len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_refused_with_a_sentence(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if case.setup is not None:
        case.setup(tmp_path)
    monkeypatch.setattr(os, "geteuid", (lambda: 0) if case.root else (lambda: 1000))
    for k, v in case.env.items():
        monkeypatch.setenv(k, v)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses before main's body runs
        code = exc.code if isinstance(exc.code, int) else 2
    err = capsys.readouterr().err
    assert code == case.code, err
    assert case.message in err, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(("cachewise: ", "cachewise ", "  - ", "Nothing was changed", "usage:")) or \
        "error:" in last, err
    if case.code == 1:
        assert "nothing" in err.lower() or "nothing was" in err.lower() or "needs a terminal" in err, err
    if case.name.startswith(("apply-", "journal-")):  # tampering is named, not taken for changed devices
        assert "the devices changed since the plan was made" not in err


def test_sigterm_during_analysis_stops_cleanly(tmp_path: Path) -> None:
    """A signal is a bad input too: SIGTERM ends the command with a sentence, not a traceback."""
    trace = tmp_path / "big.iolog"
    trace.write_text("fio version 2 iolog\n" + "".join(f"/dev/sdb read {i * 4096 % (1 << 30)} 4096\n"
                                                        for i in range(1_200_000)))
    proc = subprocess.Popen([sys.executable, "-m", "cachewise", "--state-dir", str(tmp_path), "analyze", str(trace)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The signal goes once the command has the trace open: past Python's start-up (a signal
    # then kills it before cachewise can answer) and into the analysis, on any machine's pace.
    deadline = time.monotonic() + 60
    while not _has_open(proc.pid, trace) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err and "interrupted; nothing was changed." in err


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # the process or one of its descriptors went away meanwhile
        return False


def test_broken_pipe_is_quiet() -> None:
    proc = subprocess.run(f"{sys.executable} -m cachewise scan --json --from-raw {RAW} | head -c1",
                          shell=True, capture_output=True, text=True, check=False)
    assert proc.stdout == "{" and "Traceback" not in proc.stderr


# --- the TUI's inputs ---

async def test_tui_refuses_a_bad_trace_path_and_a_trace_that_is_not_one(tmp_path: Path) -> None:
    from cachewise.core import Core
    from screens.app import CachewiseApp
    from screens.dialogs import OpenTrace
    from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

    garbage = tmp_path / "garbage"
    garbage.write_bytes(bytes(range(256)))
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        for path, message in ((tmp_path / "none", "is not a readable file"), (tmp_path, "is not a readable file")):
            await pilot.press("t")
            await pilot.pause()
            app.screen.query_one("#trace-path", Input).value = str(path)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, OpenTrace)
            assert message in str(app.screen.query_one("#open-error", Static).content)
            await pilot.press("escape")
            await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        app.screen.query_one("#trace-path", Input).value = str(garbage)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not isinstance(app.screen, OpenTrace), "a file that is no trace is refused with a notice"
        assert any("nothing was analysed" in str(n.message) for n in app._notifications)


async def test_tui_apply_refuses_a_wrong_name_and_a_plan_the_system_does_not_match() -> None:
    from advisor.plan.model import Plan
    from cachewise.core import Core
    from screens.app import CachewiseApp
    from screens.apply import ApplyScreen
    from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

    class Refusing:
        def preflight(self, plan: Plan, resuming: bool = False) -> list[object]:
            from advisor.apply.preflight import Problem
            return [Problem("device-resized", NVME, "1,000", "2,000")]

        def pending(self) -> list[object]:
            return []

    plan = Plan.from_json(good_plan())
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), executor=Refusing(), live=False),  # type: ignore[arg-type]
                       watch_hotplug=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await app.push_screen(ApplyScreen(plan))
        await app.workers.wait_for_complete()
        await pilot.pause()
        status = str(app.screen.query_one("#apply-status", Static).content)
        assert "the devices changed since the plan was made" in status and "Nothing was changed" in status
        assert app.screen.query_one("#confirm-name", Input).disabled


async def test_tui_recommend_without_a_workload_asks_for_one() -> None:
    from advisor.advice import facts
    from advisor.advice.model import Inputs
    from cachewise.core import Core
    from screens.app import CachewiseApp
    from screens.recommend import RecommendScreen
    from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

    inv = lab_inventory()
    devices = [inv.by_name("sda"), inv.by_name("nvme0n1")]
    slow, fast = (facts.device_facts(inv, d, lambda _d: None, part=p)
                  for d, p in zip(devices, ("slow", "fast"), strict=True) if d is not None)
    app = CachewiseApp(Core(FakeDiscovery(inv), live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await app.push_screen(RecommendScreen(Inputs(slow=slow, fast=(fast,)), inv))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "Choose the workload" in str(app.screen.query_one("#rec-summary", Static).content)
        assert app.screen.query_one("#workload", Select).value is Select.NULL


def test_sigterm_while_numba_compiles_is_answered_after_it(tmp_path: Path) -> None:
    """A SIGTERM while numba loads and compiles (an empty numba cache: about 1.5 s) is held
    until the compile is done, then ends the command as any other: without it, numba met the
    KeyboardInterrupt mid-compile, printed it and went on."""
    program = ("import os, signal, sys, threading\n"
               "signal.signal(signal.SIGTERM, signal.default_int_handler)  # as cachewise's main does\n"
               "from advisor.workload import mrc\n"
               "threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()\n"
               "try:\n"
               "    mrc._compiled()\n"
               "    print('compiled, no signal seen')\n"
               "except KeyboardInterrupt:\n"
               "    print('interrupted after the compile')\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=False, timeout=120,
                          env=env)
    assert proc.stdout.strip() == "interrupted after the compile", (proc.stdout, proc.stderr[-2000:])
    assert "KeyboardInterrupt" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]



def test_a_signal_taken_by_another_thread_waits_for_the_compile_too() -> None:
    """A signal sent to the process is taken by any thread that does not block it (here a
    helper thread's), and Python then runs the handler in the main thread wherever it is: in
    the compile, before signals_kept() noted it instead (numba printed "Exception ignored on
    calling ctypes callback function ... KeyboardInterrupt" one run in five). The body stands
    in for the compile: Python code running while the signal is pending."""
    program = ("import os, signal, threading, time\n"
               "signal.signal(signal.SIGTERM, signal.default_int_handler)\n"
               "from advisor.workload.jit import signals_kept\n"
               "steps = []\n"
               "go, sent = threading.Event(), threading.Event()\n"
               "def send():\n"
               "    go.wait(); os.kill(os.getpid(), signal.SIGTERM); sent.set()\n"
               "threading.Thread(target=send).start()  # started before the block: it does not block signals\n"
               "try:\n"
               "    with signals_kept():\n"
               "        go.set(); sent.wait()\n"
               "        for _ in range(50):\n"
               "            time.sleep(0.002)\n"
               "        steps.append('body done')\n"
               "    steps.append('after the block')\n"
               "except KeyboardInterrupt:\n"
               "    steps.append('interrupted')\n"
               "print(', '.join(steps))\n"
               "print(signal.getsignal(signal.SIGTERM) is signal.default_int_handler)\n")
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=False, timeout=60)
    assert proc.stdout.split("\n")[:2] == ["body done, interrupted", "True"], (proc.stdout, proc.stderr)
    assert proc.stderr == ""
