"""Trace capture planning and tracefs line parsing (the capture itself runs in the lab tier)."""

from __future__ import annotations

import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.workload import capture
from advisor.workload.capture import CapturePlan, parse_line, plan_for
from tests.conftest import FIXTURES


def test_whole_disk_is_traced_at_request_issue(raw_udev: RawSystem) -> None:
    inv = build_inventory(raw_udev)
    hdd = next(d for d in inv.devices if d.serial == "HDD0001")
    major, minor = (int(x) for x in hdd.devnum.split(":"))
    plan = plan_for(hdd, inv)
    assert plan.event == "block_rq_issue" and plan.filter == f"dev == {major << 20 | minor}"


def test_partition_is_traced_by_its_sector_range_on_the_disk(raw_udev: RawSystem, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = build_inventory(raw_udev)
    part = next(d for d in inv.devices if d.kind == "partition" and d.mountpoints)
    disk = inv.by_name(part.parent or "")
    assert disk is not None
    monkeypatch.setattr(capture, "_partition_start", lambda name: 2048)
    plan = plan_for(part, inv)
    major, minor = (int(x) for x in disk.devnum.split(":"))
    assert plan.filter == f"dev == {major << 20 | minor} && sector >= 2048 && sector < {2048 + part.size_bytes // 512}"
    # Offsets come out relative to the partition.
    line = "dd-301 [000] ..... 12.5: block_rq_issue: 8,0 R 4096 () 2056 + 8 [dd]"
    assert parse_line(line, plan) == (12.5, 8 * 512, 4096, False)


def test_logical_volume_is_traced_at_bio_queue(raw_udev: RawSystem) -> None:
    inv = build_inventory(raw_udev)
    lv = next(d for d in inv.devices if d.kind == "lvm")
    assert plan_for(lv, inv).event == "block_bio_queue"


PLAN = CapturePlan("sda", "/dev/sda", "block_rq_issue", 8 << 20, 0, 0, 1 << 30)


def test_real_tracefs_lines_from_the_lab() -> None:
    lines = (FIXTURES / "lab-trace" / "tracefs-sample.txt").read_text().splitlines()
    issued = [r for r in (parse_line(line, PLAN) for line in lines if "block_rq_issue" in line) if r is not None]
    # dd read 20 blocks of 4 KiB from the start, then wrote 5 x 8 KiB at block 60000 of 8 KiB;
    # closing the disk after writing made udev probe it again: 3 reads after the writes (by
    # systemd-udevd in one sample, by a kworker for it in the sample of 2026-11-27).
    last_write = max(i for i, r in enumerate(issued) if r[3])
    probe = [(off, n) for _, off, n, w in issued[last_write + 1 :]]
    assert probe in ([], [(0, 4096), (4096, 4096), (12288, 4096)])
    reads = [(off, n) for _, off, n, w in issued[: last_write + 1] if not w]
    assert reads == [(i * 4096, 4096) for i in range(20)]
    writes = [(off, n) for _, off, n, w in issued if w]
    assert writes == [(60000 * 8192 + i * 8192, 8192) for i in range(5)]
    queued = [parse_line(line, PLAN) for line in lines if "block_bio_queue" in line]
    # the same 25 bios and udev's; flushes (0 + 0) skipped
    assert sum(1 for r in queued if r is not None) == 25 + len(probe)
    assert all(parse_line(line, PLAN) is None for line in lines if " FF " in line or " N " in line)
