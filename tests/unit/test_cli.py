"""The command line: help, version, scan output from a captured snapshot, clear errors."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cachewise import __version__
from cachewise.cli import main
from tests.conftest import LAB_SCAN


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cachewise", *args], capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)


def test_help_lists_subcommands() -> None:
    out = run("--help")
    assert out.returncode == 0
    for sub in ("scan", "history", "tui"):
        assert sub in out.stdout


@pytest.mark.parametrize("sub", ["scan", "history", "tui"])
def test_every_subcommand_has_help(sub: str) -> None:
    out = run(sub, "--help")
    assert out.returncode == 0 and "usage: cachewise" in out.stdout


def test_version() -> None:
    assert run("--version").stdout.strip() == f"cachewise {__version__}"


def test_scan_json_from_raw_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--json", "--from-raw", str(LAB_SCAN / "raw-udev.json")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "cachewise.scan/1"
    assert {d["serial"] for d in data["devices"]} >= {"HDD0001", "SSD0001", "NVME0001"}
    assert not any(d["kind"] == "loop" for d in data["devices"])
    assert main(["scan", "--json", "--all", "--from-raw", str(LAB_SCAN / "raw-udev.json")]) == 0
    assert any(d["kind"] == "loop" for d in json.loads(capsys.readouterr().out)["devices"])


def test_scan_table_from_raw_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "--from-raw", str(LAB_SCAN / "raw-noudev.json")]) == 0
    out = capsys.readouterr().out
    assert "HDD0001" not in out or "wwn:0x5000c500a1b2c3d4" in out
    assert "udev is not running" in out and "--all shows them" in out


@pytest.mark.parametrize("argv", [
    ["scan"], ["recommend", "--slow", "sda", "--fast", "nvme0n1"],
    ["plan", "lvmcache-attach", "--lv", "labvg/data", "--ssd", "nvme0n1", "--size", "256m"],
])
def test_corrupt_raw_snapshot_is_a_clear_error(argv: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "raw.json"
    bad.write_text('{"schema": "cachewise.raw/1", "blocks": [')
    assert main([*argv, "--from-raw", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"cannot read the raw snapshot {bad}" in err and "Nothing was changed" in err


def test_scan_on_this_machine_records_history(tmp_path: Path) -> None:
    out = run("--state-dir", str(tmp_path), "scan", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["devices"], "this machine has at least one disk"
    hist = run("--state-dir", str(tmp_path), "history", "--json")
    assert json.loads(hist.stdout)["snapshots"][0]["device_count"] >= len(data["devices"])


def test_unwritable_state_dir_warns_but_scan_succeeds(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = run("--state-dir", str(blocker / "x"), "scan", "--json")
    assert out.returncode == 0
    assert "warning: cannot open the history database" in out.stderr and "nothing was recorded" in out.stderr


def test_tui_without_a_terminal_says_what_to_do() -> None:
    out = run("tui")
    assert out.returncode == 1 and "needs a terminal" in out.stderr


def test_analyze_json_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = Path(__file__).parents[1] / "fixtures" / "traces" / "fio-v3.iolog"
    assert main(["--state-dir", str(tmp_path), "analyze", "--json", str(trace)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "cachewise.analysis/1" and data["requests"] == 4000
    assert main(["--state-dir", str(tmp_path), "analyze", "--block-size", "32k", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "of 32.0 KiB" in out and "LRU hit ratio" in out and "Hot data" in out
    import sqlite3

    rows = sqlite3.connect(tmp_path / "history.sqlite3").execute(
        "SELECT trace_format, block_size, trace_sha256 FROM analyses").fetchall()
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()  # made beside the analysis
    assert rows == [("fio", 4096, digest), ("fio", 32768, digest)]


def test_analyze_of_a_trace_without_times_claims_no_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = Path(__file__).parents[1] / "fixtures" / "traces" / "fio-v2.iolog"  # v2 iologs carry no times
    assert main(["--state-dir", str(tmp_path), "analyze", "--no-record", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "the trace has no times" in out and "0.0 s" not in out and "0 IOPS" not in out


def test_analyze_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tmp_path / "nope.iolog")]) == 1
    assert "is not a readable file; nothing was analysed." in capsys.readouterr().err
    trace = Path(__file__).parents[1] / "fixtures" / "traces" / "fio-v3.iolog"
    assert main(["analyze", "--block-size", "3k", str(trace)]) == 1
    assert "block size must be a power of two" in capsys.readouterr().err


def test_long_cachewise_traces_are_analysed_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from advisor.workload.traces import load_trace, write_trace

    trace = load_trace(Path(__file__).parents[1] / "fixtures" / "traces" / "fio-v3.iolog")
    path = tmp_path / "long.cwtrace"
    write_trace(path, trace.requests, {"device": "/dev/sdb"})
    monkeypatch.setattr("advisor.workload.analysis.STREAM_REQUESTS", 1000)  # "long" for this test
    assert main(["analyze", "--json", "--no-record", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["curve_mode"] == "shards" and data["requests"] == 4000 and data["source_format"] == "cachewise"
    assert main(["analyze", "--json", "--no-record", "--mode", "exact", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["curve_mode"] == "exact"
    # On a terminal, a progress line on stderr follows each reading, then gives way to the report.
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["analyze", "--no-record", "--mode", "exact", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "\ranalysing: numbering the blocks, 100%; Ctrl-C stops" in err
    assert "\ranalysing: counting the curve, 100%; Ctrl-C stops" in err and err.endswith("\n")
    assert "analysing" not in out and "Footprint" in out
    assert main(["analyze", "--json", "--no-record", "--mode", "exact", str(path)]) == 0
    assert capsys.readouterr().err == ""  # none beside --json


@pytest.mark.parametrize("width,height", [(20, 9), (56, 9), (140, 13), (60, 11)])
def test_curve_plot_fits_its_width_ticks_round_and_names_the_chosen_size(width: int, height: int) -> None:
    from cachewise.render import curve_plot

    sizes = [2 ** k for k in range(1, 20)]
    hits = [min(1.0, k / 20) for k in range(1, 20)]
    text = curve_plot(sizes, hits, 4096, width=width, height=height, mark=2 ** 12)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 6 + width, "no line wider than the plot and its axis"
    ticks = [line[:5].strip() for line in lines[:height] if line[:5].strip()]
    assert ticks[0] == "100%" and ticks[-1] == "0%"
    assert set(ticks) <= {"100%", "75%", "50%", "25%", "0%"}, ticks
    tag = next(line for line in lines if "↑" in line)
    assert "16.0 MiB" in tag and tag.index("↑") >= 6  # 4096 blocks of 4 KiB, under the plot
    assert ("↑ recommended: 16.0 MiB" in tag) == (width >= 23)


def test_plan_cli_for_writecache_mirrors_and_remove(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    raw = str(LAB_SCAN / "raw-udev.json")
    nvme, sda = "/dev/nvme0n1", "/dev/sda"
    assert main(["plan", "writecache-attach", "--lv", "labvg/data", "--ssd", nvme, "--ssd", sda, "--size", "64m",
                 "--high-watermark", "70", "--json", "--from-raw", raw]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["kind"] == "writecache-attach" and [d["role"] for d in plan["devices"]] == ["origin", "ssd", "ssd2"]
    assert "block_size=4096 high_watermark=70" in plan["steps"][-1]["argv"]
    assert main(["plan", "remove", "--device", "/dev/labvg/data", "--from-raw", raw]) == 1
    assert "is part of no cache. Nothing was changed." in capsys.readouterr().err
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps({"config": {"backend": "lvmcache", "mode": "writeback", "size_bytes": 64 << 20,
                                          "mirrored_pool": True}}))
    assert main(["plan", "lvmcache-attach", "--lv", "labvg/data", "--ssd", nvme, "--recommendation", str(rec),
                 "--from-raw", raw]) == 1
    assert "Name both with --ssd A --ssd B" in capsys.readouterr().err
    assert main(["plan", "lvmcache-attach", "--lv", "labvg/data", "--ssd", nvme, "--ssd", sda, "--recommendation",
                 str(rec), "--json", "--from-raw", raw]) == 0
    assert any("raid1" in s["argv"] for s in json.loads(capsys.readouterr().out)["steps"])


def test_analyze_shows_bypassed_streams_and_first_touches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A backup stream beside random reads: the table names what a cache bypasses, and
    --sequential-cutoff 0 counts it in the curve instead."""
    lines = ["fio version 2 iolog", "/dev/sdb add", "/dev/sdb open"]
    lines += [f"/dev/sdb read {(i * 7919 % 300) * 4096} 4096" for i in range(3000)]
    lines += [f"/dev/sdb read {(1 << 30) + i * (1 << 20)} {1 << 20}" for i in range(64)]
    trace = tmp_path / "backup.iolog"
    trace.write_text("\n".join(lines) + "\n/dev/sdb close\n")
    assert main(["--state-dir", str(tmp_path), "analyze", "--no-record", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "Bypassed" in out and "61 requests (61.0 MiB) in streams past 4.0 MiB" in out
    assert "First touches" in out and "too short" not in out
    assert main(["--state-dir", str(tmp_path), "analyze", "--no-record", "--json", "--sequential-cutoff", "0",
                 str(trace)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["bypassed_requests"] == 0 and data["sequential_cutoff"] == 0 and data["too_short"]
