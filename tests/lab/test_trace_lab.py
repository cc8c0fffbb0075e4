"""`cachewise trace` in a real guest: the HDD traced through tracefs while fio runs Zipf(1.2)
reads and writes its own iolog; both analyses must agree within 2 points."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from tests.vm.lab import HDD, GuestRun, LabDisk, LabPool, Scenario

# Alone: the trace counts the requests of a 15 s fio run, which a busy host cuts short.
SCENARIO = Scenario("trace", "trace.sh", (
    LabDisk(HDD.name, HDD.serial, "512M", HDD.bus, HDD.rotation_rate, HDD.iops_limit, HDD.wwn),),
    timeout=900, expected_s=200, alone=True)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def analysis(run: GuestRun, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run.read(name))
    assert data["schema"] == "cachewise.analysis/1"
    return data


def test_capture_summary(guest: GuestRun) -> None:
    summary = json.loads(guest.read("trace-summary.json"))
    print(summary)
    assert summary["event"] == "block_rq_issue" and summary["stopped_by"] == "duration"
    assert summary["events"] > 1000 and summary["lost"] == 0
    assert guest.read("instances-after.txt").strip() == "", "the tracefs instance is removed afterwards"


def test_trace_agrees_with_fio_iolog_within_two_points(guest: GuestRun) -> None:
    ours, fios = analysis(guest, "analysis-trace.json"), analysis(guest, "analysis-fio.json")
    print({k: (ours[k], fios[k]) for k in ("requests", "footprint_blocks", "hot_footprint_fraction", "zipf_alpha")})
    assert ours["read_requests"] >= 0.98 * fios["read_requests"]
    for a, b in zip(ours["hot_footprint_fraction"], fios["hot_footprint_fraction"], strict=True):
        assert abs(a - b) <= 0.02
    sizes = np.asarray(fios["curve_sizes_blocks"])
    ours_at = np.interp(sizes, ours["curve_sizes_blocks"], ours["curve_hit_ratio"])
    assert np.max(np.abs(ours_at - np.asarray(fios["curve_hit_ratio"]))) <= 0.02


def test_bad_inputs(guest: GuestRun) -> None:
    assert "tracing block I/O needs root (tracefs); nothing was traced." in guest.read("bad-notroot.err")
    assert "already exists; nothing was traced." in guest.read("bad-exists.err")


def test_blktrace_fallback_records_the_reads(guest: GuestRun) -> None:
    summary = json.loads(guest.read("trace-blktrace.json"))
    assert summary["event"] == "blktrace" and summary["events"] >= 8
    result = analysis(guest, "analysis-blktrace.json")
    assert result["read_requests"] >= 8 and result["footprint_blocks"] >= 8


def test_signals_leave_no_tracefs_instance(guest: GuestRun) -> None:
    for name in ("term-startup", "term-capture", "hup-capture"):
        rc = int(guest.read(f"sig-{name}.rc"))
        err = guest.read(f"sig-{name}.err")
        print(name, rc, guest.read(f"sig-{name}-size.txt").strip(), err.strip()[-200:])
        assert guest.read(f"sig-{name}-instances.txt").strip() == "", f"{name}: the tracefs instance is removed"
        assert "Traceback" not in err
    # Stopped while capturing: the trace so far is kept, whole, and says how it ended.
    for name in ("term-capture", "hup-capture"):
        assert int(guest.read(f"sig-{name}.rc")) == 0
        summary = json.loads(guest.read(f"sig-{name}.json"))
        assert summary["stopped_by"] == "interrupt" and summary["events"] >= 32
    # Stopped during start-up: nothing was traced and no empty file blocks the next run.
    assert int(guest.read("sig-term-startup.rc")) in (130, 143)
    assert guest.read("sig-term-startup-size.txt").strip() == "none"
    # SIGKILL leaves the instance (a killed process cleans nothing); the next trace removes it.
    assert int(guest.read("sig-kill-capture.rc")) == 137
    assert guest.read("sig-kill-capture-instances.txt").strip().startswith("cachewise-")
    assert guest.read("sig-after-rerun-instances.txt").strip() == ""
