"""The re-check of a cache made too small, against the real kernel (issue 31): a 16 MiB writeback
lvmcache under reads of a 48 MiB hot file; `cachewise recheck` with the trace of that day says
grow; the resize plan runs with dirty blocks in the cache; every checksum reads back the same
(after the resize and after the LV is deactivated and activated); the same reads the next "day"
hit the new cache more, as dmsetup counts them (tests/vm/guest/recheck.sh). About 4 minutes on one
vCPU: the soak run only (`CACHEWISE_SOAK=1`, the README's soak command), to keep CI under its limit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.lab.test_watch_lab import parse_cache_status
from tests.vm.lab import HDD, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario, soak

if not soak():
    pytest.skip("the soak run only (CACHEWISE_SOAK=1)", allow_module_level=True)

MiB = 1 << 20
SCENARIO = Scenario("recheck", "recheck.sh", (
    LabDisk(HDD.name, HDD.serial, "1G", HDD.bus, HDD.rotation_rate, HDD.iops_limit, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "256M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model)),
    timeout=1500, expected_s=360, paired=True)


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    run = lab_pool.result(SCENARIO)
    print(run.read("timeline.txt") if (run.out / "timeline.txt").exists() else run.log_tail())
    return run


def verdict(run: GuestRun, name: str) -> dict[str, Any]:
    text = run.read(name)
    assert text.strip(), run.read(name.replace(".json", ".err"))
    return json.loads(text)


def status(run: GuestRun, name: str) -> dict[str, int]:
    return parse_cache_status(run.read(name).strip())


def read_hit_ratio(run: GuestRun, day: int) -> float:
    before, after = status(run, f"day{day}-before.txt"), status(run, f"day{day}-after.txt")
    hits = after["read_hits"] - before["read_hits"]
    return hits / (hits + after["read_misses"] - before["read_misses"])


def test_the_recheck_of_a_cache_too_small_says_grow_with_a_resize_plan(guest: GuestRun) -> None:
    v = verdict(guest, "recheck-1.json")
    print(guest.read("recheck-1.txt"))
    assert v["action"] == "grow", v["summary"]
    assert v["capacity_bytes"] == 16 * MiB
    assert v["size_bytes"] >= 40 * MiB, v["size_bytes"]
    assert v["observed"]["read_lookups"] >= 500
    # what the kernel counted on day 1 is what the re-check read
    assert v["observed"]["read_hit_ratio"] == pytest.approx(read_hit_ratio(guest, 1), abs=0.02)
    assert v["curve_at_size"] > v["curve_now"] + 0.2
    assert v["plan"] == "lvmcache-resize" and v["plan_json"]["kind"] == "lvmcache-resize"
    assert any("L-SIZE-4" in r["findings"] for r in v["reasons"])


def test_the_resize_runs_with_dirty_blocks_present_and_loses_none(guest: GuestRun) -> None:
    dirty = status(guest, "resize-before.txt")["dirty_bytes"]
    assert dirty > 0, "no dirty blocks when the resize began"
    applied = guest.read("resize-apply.txt")
    print(applied)
    assert "rc " not in applied.splitlines()[-1], applied
    lvs = {r["lv_name"].strip("[]"): r for r in json.loads(guest.read("lvs-after.json"))["report"][0]["lv"]}
    assert lvs["data"]["segtype"] == "cache" and lvs["data"]["cache_mode"] == "writeback"
    after = status(guest, "resize-after.txt")
    v = verdict(guest, "recheck-1.json")
    assert after["capacity_bytes"] == v["size_bytes"], (after, v["size_bytes"])
    # hot and f1 summed when written, before any cache; dirty's new content before it was written
    assert sorted(line.split()[1] for line in guest.read("sums.txt").splitlines()) == ["dirty", "f1", "hot"]
    for name in ("sums-after-resize.txt", "sums-after-reactivate.txt"):
        text = guest.read(name)
        assert text.count(": OK") == 3 and "FAILED" not in text, text


def test_the_grown_cache_serves_more_of_the_same_reads(guest: GuestRun) -> None:
    day1, day2 = read_hit_ratio(guest, 1), read_hit_ratio(guest, 2)
    print(f"read hit ratio: day 1 (16 MiB) {day1:.3f}, day 2 (grown) {day2:.3f}")
    assert day2 > day1 + 0.10
    v = verdict(guest, "recheck-2.json")
    print(v["summary"])
    assert v["action"] != "grow" or v["size_bytes"] > verdict(guest, "recheck-1.json")["size_bytes"]
