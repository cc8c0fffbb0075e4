"""Replay: the trace as a fio iolog (mapping, alignment, speed, duration, dropped writes), the
refusals (writes need the target named twice and holding nothing; only block devices), fio's JSON
parsed from real fio runs (tests/fixtures/replay/README.md), one real replay onto a temp file, and
the command line's refusals."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.devices import Device
from advisor.disks.discovery import build_inventory
from advisor.runner import CommandResult, CommandRunner
from advisor.workload.replay import (
    MAX_LENGTH,
    SCHEMA,
    Iolog,
    ReplayError,
    ReplayResult,
    Target,
    check_target,
    check_writes,
    fio_argv,
    iodepth_for,
    parse_fio_json,
    replay,
    write_iolog,
)
from advisor.workload.traces import REQUEST, Requests, write_trace
from cachewise.cli import main
from tests.conftest import FIXTURES, LAB_SCAN, raises_worded

REPLAY = FIXTURES / "replay"
TRACE = str(FIXTURES / "traces" / "fio-v3.iolog")
SIZE = 64 << 20


def requests(rows: Sequence[tuple[float, int, int, bool]]) -> Requests:
    return np.array(rows, dtype=REQUEST)


def target(tmp_path: Path, size: int = SIZE) -> Target:
    path = tmp_path / "disk.img"
    with path.open("wb") as fh:
        fh.truncate(size)
    return check_target(str(path), allow_file=True)


def iolog_lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()]


def io_rows(path: Path) -> list[tuple[int, str, int, int]]:
    """(timestamp, action, offset, length) of each request line."""
    return [(int(p[0]), p[2], int(p[3]), int(p[4])) for p in iolog_lines(path) if len(p) == 5]


# --- the iolog ------------------------------------------------------------------------------

def test_iolog_is_fio_version_3_with_the_file_added_opened_and_closed(tmp_path: Path) -> None:
    t = target(tmp_path)
    log = write_iolog(requests([(0.0, 0, 4096, False), (0.5, 8192, 4096, False)]), tmp_path / "r.iolog", t)
    lines = iolog_lines(tmp_path / "r.iolog")
    assert lines[0] == ["fio", "version", "3", "iolog"]
    assert lines[1] == ["1", t.real, "add"] and lines[2] == ["1", t.real, "open"]
    assert lines[-1] == ["500001", t.real, "close"]
    # Microseconds from 1: fio gives no delay to a line after a timestamp of 0.
    assert io_rows(tmp_path / "r.iolog") == [(1, "read", 0, 4096), (500001, "read", 8192, 4096)]
    assert log == Iolog(requests=2, dropped_writes=0, resized=0, capped=0, timed=True, seconds=0.5)


def test_offsets_wrap_inside_the_target_aligned_and_lengths_clamped(tmp_path: Path) -> None:
    t = target(tmp_path)
    rows = [(0.0, 12 << 20, 4096, False),  # inside and aligned: unchanged
            (0.1, SIZE + 5 * 4096 + 7, 4096, False),  # beyond the end: wrapped, aligned down
            (0.2, 513, 512, False),  # a 512-byte request: one whole 4 KiB block
            (0.3, SIZE - 100, 5000, False),  # would cross the end
            (0.4, 3 << 30, 8 << 20, False)]  # 8 MiB: clamped to 1 MiB, not split
    log = write_iolog(requests(rows), tmp_path / "r.iolog", t)
    got = io_rows(tmp_path / "r.iolog")
    assert len(got) == 5 and log.resized == 3
    assert got[0][2:] == (12 << 20, 4096)
    assert got[1][2] == (SIZE + 5 * 4096 + 7) % (SIZE - 4096) // 4096 * 4096
    assert got[2][2:] == (0, 4096) and got[3][3] == 8192 and got[4][3] == MAX_LENGTH
    for _, _, offset, length in got:
        assert offset % 4096 == 0 and length % 4096 == 0
        assert 0 <= offset and offset + length <= SIZE


def test_speed_scales_time_and_duration_keeps_the_first_seconds(tmp_path: Path) -> None:
    t = target(tmp_path)
    trace = requests([(10.0 + i, i * 4096, 4096, False) for i in range(10)])  # 1 request a second, from t=10
    write_iolog(trace, tmp_path / "fast.iolog", t, speed=2)
    assert [r[0] for r in io_rows(tmp_path / "fast.iolog")] == [1 + i * 500_000 for i in range(10)]
    log = write_iolog(trace, tmp_path / "short.iolog", t, duration=3.5)
    assert [r[0] for r in io_rows(tmp_path / "short.iolog")] == [1, 1_000_001, 2_000_001, 3_000_001]
    assert log.seconds == 3.0 and log.requests == 4
    both = write_iolog(trace, tmp_path / "both.iolog", t, speed=4, duration=4.5)
    assert both.requests == 5 and both.seconds == 1.0  # 4 s of trace at four times the speed


def test_unsorted_times_replay_in_time_order(tmp_path: Path) -> None:
    write_iolog(requests([(0.2, 8192, 4096, False), (0.1, 4096, 4096, False)]), tmp_path / "r.iolog", target(tmp_path))
    assert [r[2] for r in io_rows(tmp_path / "r.iolog")] == [4096, 8192]


def test_writes_are_dropped_and_counted_unless_allowed(tmp_path: Path) -> None:
    t = target(tmp_path)
    trace = requests([(0.0, 0, 4096, False), (0.1, 4096, 4096, True), (0.2, 8192, 4096, True)])
    log = write_iolog(trace, tmp_path / "ro.iolog", t)
    assert log.dropped_writes == 2 and [r[1] for r in io_rows(tmp_path / "ro.iolog")] == ["read"]
    log = write_iolog(trace, tmp_path / "rw.iolog", t, writes=True)
    assert log.dropped_writes == 0 and [r[1] for r in io_rows(tmp_path / "rw.iolog")] == ["read", "write", "write"]
    with pytest.raises(ReplayError, match="holds no reads to replay .2 writes were dropped"):
        write_iolog(requests([(0.0, 0, 4096, True), (0.1, 0, 4096, True)]), tmp_path / "w.iolog", t)


def test_a_trace_without_times_replays_back_to_back(tmp_path: Path) -> None:
    log = write_iolog(requests([(0.0, i * 4096, 4096, False) for i in range(5)]), tmp_path / "r.iolog",
                      target(tmp_path), speed=3, duration=0.001)
    assert not log.timed and log.seconds == 0 and log.requests == 5  # duration limits fio's run instead
    assert {r[0] for r in io_rows(tmp_path / "r.iolog")} == {1}


def test_the_cap_keeps_the_first_requests(tmp_path: Path) -> None:
    log = write_iolog(requests([(i / 10, 0, 4096, False) for i in range(10)]), tmp_path / "r.iolog",
                      target(tmp_path), cap=4)
    assert log.requests == 4 and log.capped == 6 and len(io_rows(tmp_path / "r.iolog")) == 4


@pytest.mark.parametrize("speed", [0.001, 5000.0])
def test_speed_out_of_range_is_refused(tmp_path: Path, speed: float) -> None:
    with raises_worded(ReplayError, "--speed must be between 0.01 and 1000"):
        write_iolog(requests([(0.0, 0, 4096, False)]), tmp_path / "r.iolog", target(tmp_path), speed=speed)


def test_queue_depth_is_one_only_for_timed_replays_on_fio_before_3_36() -> None:
    assert iodepth_for("fio-3.33", timed=True) == 1
    assert iodepth_for("fio-3.33", timed=False) == 16
    assert iodepth_for("fio-3.36", timed=True) == 16 and iodepth_for("fio-3.41-12-gabc", timed=True) == 16
    assert iodepth_for("something else", timed=True) == 1


def test_fio_command_is_read_only_unless_writes_were_allowed() -> None:
    argv = fio_argv("/dev/sdx", "/tmp/r.iolog", "/tmp/o.json", iodepth=1, runtime=31.5, writes=False, chunked=False)
    assert argv[:2] == ["fio", "--readonly"]
    for option in ("--filename=/dev/sdx", "--read_iolog=/tmp/r.iolog", "--replay_no_stall=0", "--direct=1",
                   "--ioengine=libaio", "--iodepth=1", "--runtime=31500ms", "--output-format=json",
                   "--output=/tmp/o.json"):
        assert option in argv
    assert "--read_iolog_chunked=1" not in argv  # it loses a timed log's delays
    rw = fio_argv("/dev/sdx", "/tmp/r.iolog", "/tmp/o.json", iodepth=16, runtime=60, writes=True, chunked=True)
    assert "--readonly" not in rw and "--read_iolog_chunked=1" in rw


# --- refusals -------------------------------------------------------------------------------

def test_targets_that_are_not_block_devices_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="/dev/null is a character device, not a block device; nothing was replayed"):
        check_target("/dev/null")
    with pytest.raises(ReplayError, match="does not exist; nothing was replayed"):
        check_target(str(tmp_path / "none"))
    with pytest.raises(ReplayError, match="is a directory, not a block device"):
        check_target(str(tmp_path))
    (tmp_path / "f").write_bytes(b"x" * (4 << 20))
    with pytest.raises(ReplayError, match="is not a block device"):
        check_target(str(tmp_path / "f"))  # a regular file only with allow_file, which only tests pass
    assert check_target(str(tmp_path / "f"), allow_file=True).size == 4 << 20
    (tmp_path / "small").write_bytes(b"x" * 4096)
    with pytest.raises(ReplayError, match="too small to replay onto"):
        check_target(str(tmp_path / "small"), allow_file=True)


class Blkid(CommandRunner):
    """Answers ``blkid -p`` as a device with ``found`` (KEY=value lines) would."""

    def __init__(self, found: str = "", code: int = 2) -> None:
        super().__init__()
        self.found, self.code, self.asked = found, code, 0

    def run(self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True) -> CommandResult:
        assert argv[:4] == ["blkid", "-p", "-o", "export"]
        self.asked += 1
        return CommandResult(tuple(argv), self.code, self.found, "", 0.01)


def lab_device(name: str) -> Device:
    dev = build_inventory(RawSystem.load(LAB_SCAN / "raw-udev.json")).by_name(name)
    assert dev is not None
    return dev


def block(path: str) -> Target:
    return Target(path, path, True, 1 << 30)


def test_writes_need_the_target_named_again_exactly() -> None:
    sda = block("/dev/sda")
    with raises_worded(ReplayError, "needs --disposable /dev/sda as well; nothing was written"):
        check_writes(sda, None, lab_device("sda"), Blkid())
    with raises_worded(ReplayError, "--disposable /dev/sdb does not repeat the target /dev/sda exactly"):
        check_writes(sda, "/dev/sdb", lab_device("sda"), Blkid())
    with pytest.raises(ReplayError, match="does not repeat"):
        check_writes(sda, "sda", lab_device("sda"), Blkid())
    runner = Blkid()
    check_writes(sda, "/dev/sda", lab_device("sda"), runner)  # free, and blkid finds nothing
    assert runner.asked == 1


@pytest.mark.parametrize(("name", "why"), [
    ("sdb", "in use because LVM physical volume of VG labvg"),
    ("sdc1", "in use because mounted at /run/lab/mnt"),
    ("dm-1", "has data: LV labvg/data"),
    ("bcache0", "has data: the bcache device"),
])
def test_writes_are_refused_on_devices_that_hold_data(name: str, why: str) -> None:
    runner = Blkid()
    with pytest.raises(ReplayError, match=f"/dev/{name} is not free \\({why}.*nothing was written"):
        check_writes(block(f"/dev/{name}"), f"/dev/{name}", lab_device(name), runner)
    assert runner.asked == 0


def test_a_fresh_blkid_signature_refuses_writes_where_discovery_saw_none() -> None:
    with pytest.raises(ReplayError, match="/dev/sda holds a xfs signature .blkid.; nothing was written"):
        check_writes(block("/dev/sda"), "/dev/sda", lab_device("sda"), Blkid("DEVNAME=/dev/sda\nTYPE=xfs\n", 0))
    with pytest.raises(ReplayError, match="holds a dos signature"):
        check_writes(block("/dev/sda"), "/dev/sda", lab_device("sda"), Blkid("PTTYPE=dos\n", 0))
    with pytest.raises(ReplayError, match="could not be probed"):
        check_writes(block("/dev/sda"), "/dev/sda", lab_device("sda"), Blkid("", 8))
    with pytest.raises(ReplayError, match="discovery does not list /dev/sda"):
        check_writes(block("/dev/sda"), "/dev/sda", None, Blkid())


# --- fio's JSON, from real runs -------------------------------------------------------------

def test_parse_a_timed_read_only_replay() -> None:
    m = parse_fio_json(json.loads((REPLAY / "fio-timed-readonly.json").read_text()))
    assert m.requests == 1359 == sum(1 for p in iolog_lines(REPLAY / "timed-readonly.iolog") if len(p) == 5)
    assert m.read_iops == 1274.9 and m.write_iops == 0 and m.bytes_written == 0
    assert (m.read_p50_us, m.read_p90_us, m.read_p99_us, m.read_p999_us) == (57.1, 154.6, 667.6, 2342.9)
    assert m.bytes_read == 14745600 and m.seconds == 1.065  # about the trace's 1 s


def test_parse_an_untimed_replay_with_writes() -> None:
    m = parse_fio_json(json.loads((REPLAY / "fio-untimed-writes.json").read_text()))
    assert m.requests == 2000 and m.read_iops == 23431.0 and m.write_iops == 11051.7
    assert m.bytes_read == 14639104 and m.bytes_written == 7319552
    assert m.read_p50_us == 370.7 and m.read_p999_us == 1237.0


def test_parse_empty_output_reads_as_nothing_measured() -> None:
    m = parse_fio_json({})
    assert m.requests == 0 and m.read_p50_us is None and m.seconds == 0


def test_result_round_trips_through_json() -> None:
    m = parse_fio_json(json.loads((REPLAY / "fio-timed-readonly.json").read_text()))
    r = ReplayResult("before", "t.cwtrace", "/dev/sdb", 1359, 641, 1.0, True, 1, "fio-3.33", m, ("a note",))
    data = json.loads(json.dumps(r.to_json()))
    assert data["schema"] == SCHEMA == "cachewise.replay/1"
    assert ReplayResult.from_json(data) == r and r.complete
    with pytest.raises(ValueError, match="not a cachewise.replay/1 result"):
        ReplayResult.from_json({"schema": "cachewise.probe/1"})
    with pytest.raises(ValueError, match="incomplete"):
        ReplayResult.from_json({"schema": SCHEMA, "label": "x"})


# --- a real replay --------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_real_replay_onto_a_temp_file(tmp_path: Path) -> None:
    disk = tmp_path / "disk.img"
    disk.write_bytes(os.urandom(8 << 20))  # written data, so O_DIRECT reads are real reads
    rng = np.random.default_rng(3)
    trace = np.zeros(300, REQUEST)
    trace["t"] = np.arange(300) * 0.001  # 0.3 s
    trace["offset"] = rng.integers(0, 1 << 30, 300)
    trace["length"] = 4096
    trace["write"] = np.arange(300) % 10 == 0
    write_trace(tmp_path / "t.cwtrace", trace, {})
    before = disk.read_bytes()
    r = replay(tmp_path / "t.cwtrace", str(disk), CommandRunner(), label="file", allow_file=True)
    assert r.measured.read_iops > 0 and r.measured.read_p50_us is not None and r.measured.read_p50_us > 0
    assert r.planned == r.measured.requests == 270 and r.dropped_writes == 30 and r.complete
    assert r.measured.bytes_written == 0 and disk.read_bytes() == before
    assert any("30 write requests were dropped" in n for n in r.notes)


# --- the command line -----------------------------------------------------------------------

def fake_block_target(monkeypatch: pytest.MonkeyPatch, root: bool) -> None:
    """The target check answers as for a block device /dev/sdz (the CLI takes no regular files),
    and the user is root or not."""
    monkeypatch.setattr("advisor.workload.replay.check_target", lambda path, allow_file=False: block(path))
    monkeypatch.setattr(os, "geteuid", (lambda: 0) if root else (lambda: 1000))


CLI_CASES = [
    ("char-device", ["--target", "/dev/null"], None, "/dev/null is a character device, not a block device"),
    ("missing-target", ["--target", "{tmp}/none"], None, "does not exist; nothing was replayed"),
    ("directory-target", ["--target", "{tmp}"], None, "is a directory, not a block device"),
    ("not-root", ["--target", "/dev/sdz"], False, "needs root (fio reads the device directly); nothing was replayed"),
    ("writes-without-disposable", ["--target", "/dev/sdz", "--allow-writes"], True,
     "needs --disposable /dev/sdz as well; nothing was written"),
    ("writes-wrong-disposable", ["--target", "/dev/sdz", "--allow-writes", "--disposable", "/dev/sdy"], True,
     "--disposable /dev/sdy does not repeat the target /dev/sdz exactly; nothing was written"),
    ("speed-too-fast", ["--target", "/dev/sdz", "--speed", "5000"], True, "--speed must be between 0.01 and 1000"),
    ("duration-bad", ["--target", "/dev/sdz", "--duration", "soon"], True, "--duration: not a duration"),
    ("compare-missing", ["--target", "/dev/sdz", "--compare", "{tmp}/none.json"], True,
     "cannot read the replay result"),
    ("compare-not-a-result", ["--target", "/dev/sdz", "--compare", TRACE], True,
     "is not a `cachewise replay --json` result"),
]


@pytest.mark.parametrize(("argv", "root", "message"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_refusals_are_one_sentence(argv: list[str], root: bool | None, message: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    if root is not None:
        fake_block_target(monkeypatch, root)
    code = main(["--state-dir", str(tmp_path / "state"), "replay", TRACE,
                 *[a.replace("{tmp}", str(tmp_path)) for a in argv]])
    err = capsys.readouterr().err
    assert code == 1, err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("cachewise: ")
    assert "nothing was" in err.lower()


def test_cli_missing_trace_and_missing_fio(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    fake_block_target(monkeypatch, root=True)
    assert main(["replay", str(tmp_path / "none"), "--target", "/dev/sdz"]) == 1
    assert "is not a readable file" in capsys.readouterr().err
    monkeypatch.setattr("advisor.runner.CommandRunner._path", lambda self: "/nonexistent")
    monkeypatch.setattr("advisor.disks.probe._FIO_VERSIONS", {})
    assert main(["replay", TRACE, "--target", "/dev/sdz"]) == 1
    err = capsys.readouterr().err
    assert "fio is not installed" in err and "Install the fio package" in err and "nothing was replayed" in err


def test_cli_speed_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["replay", TRACE, "--target", "/dev/sdz", "--speed", "0"])
    assert exc.value.code == 2 and "must be a number above zero" in capsys.readouterr().err


def test_cli_compare_table_puts_runs_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    m = parse_fio_json(json.loads((REPLAY / "fio-timed-readonly.json").read_text()))
    before = ReplayResult("hdd alone", TRACE, "/dev/sdz", 1359, 641, 1.0, True, 1, "fio-3.33", m)
    (tmp_path / "before.json").write_text(json.dumps(before.to_json()))
    after = ReplayResult("with cache", TRACE, "/dev/sdz", 1359, 641, 1.0, True, 1, "fio-3.33",
                         parse_fio_json(json.loads((REPLAY / "fio-untimed-writes.json").read_text())))
    monkeypatch.setattr("cachewise.core.workload.replay_trace", lambda *a, **k: after)
    assert main(["replay", TRACE, "--target", "/dev/sdz", "--compare", str(tmp_path / "before.json")]) == 0
    out = capsys.readouterr().out
    assert "hdd alone" in out and "with cache" in out and "last / first" in out
    assert "Read latency p50" in out and "57 µs" in out and "×18.38" in out  # 23431 / 1274.9 read IOPS
    assert main(["replay", TRACE, "--target", "/dev/sdz", "--json"]) == 0
    assert ReplayResult.from_json(json.loads(capsys.readouterr().out)) == after
