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
