"""`cachewise trace` in a real guest: the HDD traced through tracefs while fio runs Zipf(1.2)
reads and writes its own iolog; both analyses must agree within 2 points."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from advisor.workload import capfile, periods, rawtrace
from tests.vm.lab import HDD, GuestRun, LabDisk, LabPool, Scenario

# Paired (one vCPU beside another guest): the HDD's IOPS limit, not the CPU, sets how many
# requests the 15 s fio run makes (2,268 traced, none lost, 336 s for both boots on 2026-11-27,
# against 315 s alone with two vCPUs). Boot 1 ends in a power cut in the middle of a capture;
# boot 2 (capture_after.sh) resumes it.
SCENARIO = Scenario("trace", "trace.sh", (
    LabDisk(HDD.name, HDD.serial, "512M", HDD.bus, HDD.rotation_rate, HDD.iops_limit, HDD.wwn),
    LabDisk("capstate", "CAPSTATE01", "128M", rotation_rate=1)),
    timeout=900, expected_s=340, paired=True, reboots=("capture_after.sh",))


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


def fio_reads(run: GuestRun, name: str) -> tuple[float, np.ndarray]:
    """(fio's start, epoch s; its reads as rows of (microseconds since start, offset, length)) from
    its iolog (version 3 counts microseconds)."""
    start = float(run.read(f"{name}.start"))
    rows = [line.split() for line in run.read(f"{name}.iolog").splitlines()]
    reads = [(int(r[0]), int(r[3]), int(r[4])) for r in rows if len(r) == 5 and r[2] == "read"]
    return start, np.array(reads, dtype=np.int64).reshape(-1, 3)


def test_a_capture_cut_by_a_power_cut_keeps_all_but_its_last_minute(guest: GuestRun) -> None:
    assert (guest.out / "cut-1").exists(), "boot 1 ended in the power cut"
    after = json.loads(guest.read("capture-after-cut.json"))
    print({k: after[k] for k in ("sampled_requests", "requests", "sample_rate", "damaged", "runs")})
    assert after["sample_rate"] == 1.0 and after["runs"] == []  # cut: no run ended
    start, reads = fio_reads(guest, "capture-fio1")
    end = float(guest.read("capture-fio1.end"))
    cap = capfile.read_capture(capfile.capture_files(guest.out / "cap"))
    # the guest's kernel (Debian's 6.1) counts and samples in its BPF program, not through tracefs
    assert cap.meta.get("tracer") == "bpf", cap.meta.get("bpf_refused")
    first_run = cap.requests[cap.requests["t"] < end + 5]
    flushed_to = float(first_run["t"][-1])
    print(f"fio ran {end - start:.1f} s; the capture kept its first {flushed_to - start:.1f} s")
    assert end - flushed_to <= 60 + 5, "a power cut loses at most the last minute"
    assert flushed_to - start >= 30, "the capture had flushed its records before the cut"
    # every read fio issued before that point is in the capture, at its offset and length
    issued = reads[reads[:, 0] / 1e6 < flushed_to - start - 1]
    captured = set(zip(first_run["offset"].tolist(), first_run["length"].tolist(), strict=True))
    missing = [r for r in issued.tolist() if (r[1], r[2]) not in captured]
    assert len(issued) > 500 and len(missing) <= 0.01 * len(issued), missing[:5]
    # the hours' counts survived to the last flush too
    assert sum(h["requests"] for h in after["hours"]) >= 0.99 * len(issued)


def test_the_capture_resumes_after_the_reboot_and_sees_the_stream(guest: GuestRun) -> None:
    resumed = json.loads(guest.read("capture-2.json"))
    print(resumed)
    assert resumed["resumed"] and resumed["stopped_by"] == "interrupt" and resumed["sample_rate"] == 1.0
    first = json.loads(guest.read("capture-after-cut.json"))
    assert abs(resumed["until"] - (first["first"] + 3600)) < 120, "resumed to the first run's end, not a new hour"
    final = json.loads(guest.read("capture-final.json"))
    assert final["runs"] and final["runs"][-1]["why"] == "interrupt" and final["damaged"] == first["damaged"]
    assert final["requests"] > sum(h["requests"] for h in first["hours"])
    analysis_ = analysis(guest, "capture-analysis.json")
    print({k: analysis_[k] for k in ("requests", "bypassed_bytes", "sequential_share", "footprint_bytes")})
    assert analysis_["source_format"] == "capture" and analysis_["requests"] == final["requests"]
    # the 96 MiB scan in 1 MiB reads (split as the disk takes them): past bcache's 4 MiB cutoff,
    # told apart from the whole stream
    assert 80 << 20 <= analysis_["bypassed_bytes"] <= 96 << 20 and analysis_["sequential_share"] > 0
    exported = json.loads(guest.read("capture-export.json"))
    assert (guest.out / "capture.oracleGeneral").stat().st_size == 24 * exported["records"] > 0
    assert "holds a capture of wwn:" in guest.read("capture-other.err")


def test_the_captures_analysis_names_its_phases_across_the_reboot(guest: GuestRun) -> None:
    """Boot 1's Zipf hot set over the whole disk, the power cut and the reboot (no run covers it:
    a gap, not a quiet time), boot 2's 96 MiB scan, then a hot set on other data: the analysis of
    the whole capture finds these phases in this order and names them."""
    span = analysis(guest, "capture-analysis.json")["periods"]
    for ph in span["phases"]:
        print(ph["name"], ph["windows"], ph["iops"], ph["sequential_share"])
    print([(w["kind"], round(w["reuse"], 2), round(w["seen_before"], 2)) for w in span["windows"]])
    kinds = [ph["kind"] for ph in span["phases"]]
    assert kinds[0] == periods.HOT and periods.SCAN in kinds, kinds
    after_scan = kinds[kinds.index(periods.SCAN) + 1 :]
    assert after_scan and after_scan[0] in (periods.NEW_HOT, periods.MOVING), "boot 2's hot set is new data"
    gap = [w for w in span["windows"] if w["captured_seconds"] == 0]
    first_run_end = max(ph["end"] for ph in span["phases"] if ph["start"] < gap[0]["start"]) if gap else None
    assert gap and first_run_end is not None and first_run_end <= gap[0]["start"], "the reboot is a gap"
    scan = span["phases"][kinds.index(periods.SCAN)]
    assert scan["start"] > gap[0]["start"] and scan["sequential_share"] > 0.5 and scan["read_share"] == 1.0
    assert span["days"] == [] and 10 <= span["window_seconds"] <= 30


def test_the_guest_kernels_binary_pages_hold_what_its_text_showed(guest: GuestRun) -> None:
    """The guest's kernel (another version than the host's): its formats are read, and its pages
    of the sample's events give the block_rq_issue requests its text showed."""
    layout = rawtrace.parse_format(guest.read("format-block_rq_issue.txt"))
    rawtrace.parse_format(guest.read("format-block_bio_queue.txt"))
    page = rawtrace.check_page_header(guest.read("header_page.txt"))
    events, counts = rawtrace.parse_pages((guest.out / "tracefs-sample-pages.bin").read_bytes(), layout, page)
    text = re.findall(r"block_rq_issue: \d+,\d+ (\S+) (?:\d+ \([^)]*\) )?(\d+) \+ (\d+)", guest.read("tracefs-sample.txt"))
    print(len(events), counts, len(text))
    assert counts.damaged == 0 and counts.other > 0  # the bio_queue events beside
    assert sorted((int(s), int(c), "W" in rwbs) for rwbs, s, c in text) == sorted(
        (int(e["sector"]), int(e["sectors"]), e["rwbs"] == rawtrace.WRITE) for e in events
    )
