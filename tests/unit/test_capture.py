"""Trace capture planning and tracefs line parsing (the capture itself runs in the lab tier)."""

from __future__ import annotations

import pytest

from advisor import capture
from advisor.capture import CapturePlan, parse_line, plan_for
from advisor.collect import RawSystem
from advisor.discovery import build_inventory


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


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # The line shape shared/LAB.md records from the lab kernel's tracefs.
        ("fio-268 [001] ..... 45.670199: block_rq_issue: 8,0 R 4096 () 1506848 + 8 [fio]", (45.670199, 1506848 * 512, 4096, False)),
        ("kworker/1:1-50 [001] d..1. 46.000001: block_rq_issue: 8,0 WS 8192 () 100 + 16 [kworker/1:1]", (46.000001, 51200, 8192, True)),
        ("fio-270 [000] ..... 47.1: block_bio_queue: 254,0 R 2048 + 8 [fio]", (47.1, 2048 * 512, 4096, False)),
        ("jbd2-99 [000] ..... 48.0: block_rq_issue: 8,0 FF 0 () 0 + 0 [jbd2]", None),  # a flush, not I/O to cache
        ("garbage", None),
    ],
)
def test_tracefs_lines(line: str, expected: tuple[float, int, int, bool] | None) -> None:
    assert parse_line(line, PLAN) == expected
