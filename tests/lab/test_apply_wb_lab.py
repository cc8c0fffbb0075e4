"""Uncaching a writeback lvmcache while it holds dirty blocks, with a writer still running:
the flush's progress is shown and every checksum matches afterwards (real dm-cache)."""

from __future__ import annotations

import json
import re

import pytest

from tests.vm.lab import HDD, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario

SCENARIO = Scenario("writeback", "apply_wb.sh", (
    LabDisk(HDD.name, HDD.serial, "384M", HDD.bus, HDD.rotation_rate, None, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "256M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model)),
    timeout=1200, expected_s=250)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    return lab_pool.result(SCENARIO)


def segtype(run: GuestRun, name: str) -> tuple[str, str]:
    row = next(r for r in json.loads(run.read(name))["report"][0]["lv"] if r["lv_name"] == "data")
    return row["segtype"], row["cache_mode"]


def test_uncache_from_writeback_with_dirty_blocks_keeps_every_checksum(guest: GuestRun) -> None:
    samples = [int(s) for s in guest.read("wb-dirty-samples.txt").split()]
    uncache = guest.read("wb-uncache.txt")
    print(samples, uncache)
    assert segtype(guest, "wb-attached-lvs.json") == ("cache", "writeback")
    assert max(samples) > 0, "dirty blocks existed when the uncache began"
    flushed = [int(n.replace(",", "")) for n in re.findall(r"… ([\d,]+) dirty blocks to write back", uncache)]
    assert flushed and max(flushed) > 0, "the flush's progress is shown while dirty blocks remain"
    assert "done" in uncache
    assert segtype(guest, "wb-uncached-lvs.json")[0] == "linear"
    assert guest.read("verify.txt").strip().endswith("ok")
