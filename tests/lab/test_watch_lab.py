"""Watching caches work against the real kernel (issue 12): `cachewise watch` samples equal what
dmsetup and sysfs showed (parsed here, independently), the hit ratio rises under a zipf load,
the Warm-up screen runs in tmux, flushes count down to clean, a stall is explained, and
`cachewise replay` measures the HDD before and after the cache."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.vm.lab import HDD, REPO, SATA_SSD, GuestRun, LabDisk, LabPool, Scenario

SCENARIO = Scenario("watch", "watch.sh", (
    LabDisk(HDD.name, HDD.serial, "1G", HDD.bus, HDD.rotation_rate, HDD.iops_limit, HDD.wwn),
    LabDisk(SATA_SSD.name, SATA_SSD.serial, "256M", SATA_SSD.bus, SATA_SSD.rotation_rate, model=SATA_SSD.model),
    # bcache's cache needs more than 512 buckets of 512 KiB (recipes/bcache.py); the backing
    # disk is slow enough that its flush can be watched.
    LabDisk("bhdd", "BHDD0001", "384M", "scsi", rotation_rate=7200, iops_limit=300),
    LabDisk("bssd", "BSSD0001", "320M", "sata", rotation_rate=1)), timeout=1500, expected_s=370)

ARTEFACTS = REPO / "test-artifacts" / "lab-watch"


@pytest.fixture(scope="module")
def guest(lab_pool: LabPool) -> GuestRun:
    run = lab_pool.result(SCENARIO)
    print(run.read("timeline.txt") if (run.out / "timeline.txt").exists() else run.log_tail())
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    for name in ("warmup-screen-1.txt", "warmup-screen-2.txt", "replay-table.txt", "cachewise.prom",
                 "bc-flush.txt", "un-apply.txt"):
        if (run.out / name).exists():
            shutil.copy(run.out / name, ARTEFACTS / name)
    return run


def lines(run: GuestRun, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.read(name).splitlines() if line.startswith("{")]


def parse_cache_status(line: str) -> dict[str, int]:
    """dm-cache's status line, by the kernel's cache.rst, independently of advisor.readers."""
    f = line.split()
    assert f[2] == "cache", line
    block = int(f[5]) * 512
    used, total = (int(x) for x in f[6].split("/"))
    rh, rm, wh, wm, demotions, promotions, dirty = (int(x) for x in f[7:14])
    return {"used_bytes": used * block, "capacity_bytes": total * block, "read_hits": rh, "read_misses": rm,
            "write_hits": wh, "write_misses": wm, "demotions": demotions, "promotions": promotions,
            "dirty_bytes": dirty * block, "hits": rh + wh, "misses": rm + wm}


def hprint(text: str) -> int:
    """bcache's sizes: '2.8M' -> bytes."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kMGT]?)", text.strip())
    assert m, text
    return int(float(m[1]) * 1024 ** ("kMGT".index(m[2]) + 1 if m[2] else 0))


def interval_ratios(samples: list[dict[str, Any]]) -> list[float]:
    """The hit ratio of each interval between samples that saw lookups."""
    out = []
    for a, b in zip(samples, samples[1:], strict=False):
        hits, misses = b["hits"] - a["hits"], b["misses"] - a["misses"]
        if hits + misses > 0:
            out.append(hits / (hits + misses))
    return out


def rising(samples: list[dict[str, Any]]) -> tuple[float, float]:
    """The mean hit ratio of the first and the last third of the intervals that saw lookups."""
    ratios = interval_ratios(samples)
    assert len(ratios) >= 6, ratios
    third = len(ratios) // 3
    return sum(ratios[:third]) / third, sum(ratios[-third:]) / third


def test_lvmcache_samples_equal_dmsetup_and_hit_ratio_rises(guest: GuestRun) -> None:
    records = lines(guest, "lvm-watch.jsonl")
    assert len(records) >= 20, guest.read("lvm-watch.err")
    for r in records:
        expected = parse_cache_status(r["sample"]["raw"]["status"])
        assert {k: r["sample"][k] for k in expected} == expected
    samples = [r["sample"] for r in records]
    early, late = rising(samples)
    print(f"hit ratio early {early:.2f}, late {late:.2f}; fill {samples[0]['used_bytes']} -> {samples[-1]['used_bytes']}")
    assert late > early
    assert samples[-1]["used_bytes"] > samples[0]["used_bytes"], "the cache filled"
    assert any(r["figures"]["hit_ratio"] is not None for r in records)


def test_a_quiet_sample_equals_dmsetup_status_read_around_it(guest: GuestRun) -> None:
    before, after = guest.read("quiet-before.txt"), guest.read("quiet-after.txt")
    (sample,) = [r["sample"] for r in lines(guest, "quiet.jsonl")]
    expected = parse_cache_status(before.removeprefix("labvg-data: "))
    if before == after:
        assert {k: sample[k] for k in expected} == expected
    else:  # something still moved: the sample lies between the two readings
        later = parse_cache_status(after)
        assert all(expected[k] <= sample[k] <= later[k] for k in ("hits", "misses", "promotions"))


def test_status_lists_the_cache_and_writes_a_prometheus_textfile(guest: GuestRun) -> None:
    status = json.loads(guest.read("status-lvm.json"))
    (cache,) = [c for c in status["caches"] if c["name"] == "labvg/data"]
    assert cache["kind"] == "dm-cache" and cache["sample"]["mode"] == "writethrough"
    prom = guest.read("cachewise.prom")
    assert 'cachewise_cache_hits_total{target="labvg/data"}' in prom
    # prometheus_client's text format sorts the labels
    assert re.search(r'cachewise_cache_info\{kind="dm-cache",mode="writethrough",policy="[a-z]+",state="[a-z_]+",'
                     r'target="labvg/data"\}', prom)


def test_warmup_screen_in_tmux_shows_fill_and_hit_ratio_changing(guest: GuestRun) -> None:
    first, second = guest.read("warmup-screen-1.txt"), guest.read("warmup-screen-2.txt")
    print(first, second, sep="\n----\n")
    for screen in (first, second):
        assert "labvg/data" in screen and re.search(r"[Ff]ill", screen) and re.search(r"[Hh]it", screen)
    assert first != second
    assert re.findall(r"\d+(?:\.\d+)?%", first) != re.findall(r"\d+(?:\.\d+)?%", second)


def test_replay_before_and_after_the_cache(guest: GuestRun) -> None:
    origin = json.loads(guest.read("replay-origin.json"))
    cold = json.loads(guest.read("replay-cold.json"))
    warm = json.loads(guest.read("replay-warm.json"))
    print(guest.read("replay-table.txt"))
    for run in (origin, cold, warm):
        assert run["schema"] == "cachewise.replay/1" and run["measured"]["requests"] > 0
    p50 = {name: run["measured"]["read_p50_us"] for name, run in (("origin", origin), ("cold", cold), ("warm", warm))}
    print(p50)
    assert p50["warm"] < p50["origin"]
    table = guest.read("replay-table.txt")
    assert "origin" in table and "warm" in table


def segtype(run: GuestRun, name: str) -> tuple[str, str]:
    row = next(r for r in json.loads(run.read(name))["report"][0]["lv"] if r["lv_name"] == "data")
    return row["segtype"], row["cache_mode"]


def test_uncache_from_writeback_with_dirty_blocks_keeps_every_checksum(guest: GuestRun) -> None:
    """Moved here from test_apply_wb_lab.py (its boot is now part of this one), assertions kept."""
    samples = [int(s) for s in guest.read("wb-dirty-samples.txt").split()]
    uncache = guest.read("un-apply.txt")
    print(samples, uncache)
    assert segtype(guest, "wb-attached-lvs.json") == ("cache", "writeback")
    assert max(samples) > 0, "dirty blocks existed when the uncache began"
    flushed = [int(n.replace(",", "")) for n in re.findall(r"… ([\d,]+) dirty blocks to write back", uncache)]
    assert flushed and max(flushed) > 0, "the flush's progress is shown while dirty blocks remain"
    assert "done" in uncache
    assert segtype(guest, "wb-uncached-lvs.json")[0] == "linear"
    assert guest.read("verify.txt").strip().endswith("ok")


def test_lvmcache_writeback_uncache_counts_dirty_blocks_down_to_clean(guest: GuestRun) -> None:
    dirty = [r["sample"]["dirty_bytes"] for r in lines(guest, "un-watch.jsonl")]
    print(dirty, guest.read("un-watch.err"))
    assert max(dirty) > 0, "watch saw dirty blocks"
    assert dirty[-1] == 0 or "no longer a cache" in guest.read("un-watch.err"), "then none, or the cache was gone"
    rates = re.findall(r"dirty blocks to write back; [\d,]+ blocks/s, about [^\n]+ left", guest.read("un-apply.txt"))
    assert rates, "apply showed the flush's rate and time left"


def test_bcache_samples_equal_sysfs_and_hit_ratio_rises(guest: GuestRun) -> None:
    records = lines(guest, "bc-watch.jsonl")
    assert len(records) >= 10, guest.read("bc-watch.err")
    for r in records:
        raw, s = r["sample"]["raw"], r["sample"]
        assert s["hits"] == int(raw["stats_total/cache_hits"]) and s["misses"] == int(raw["stats_total/cache_misses"])
        assert s["dirty_bytes"] == hprint(raw["dirty_data"]) and s["state"] == raw["state"]
    # bcache moves its counters into stats_total in steps (about every 14 s under emulation), so
    # its rise shows in the total since the cache was made, first sample to last.
    samples = [r["sample"] for r in records]
    # The first sample can come before bcache's first step (no lookups counted yet, seen in CI):
    # a cache that has served nothing has hit nothing.
    first, last = (s["hits"] / (s["hits"] + s["misses"]) if s["hits"] + s["misses"] else 0.0
                   for s in (samples[0], samples[-1]))
    print(f"bcache hit ratio since it was made: first sample {first:.2f}, last {last:.2f}")
    assert last > first and samples[-1]["hits"] > samples[0]["hits"]
    before, after = guest.read("bc-quiet-before.txt"), guest.read("bc-quiet-after.txt")
    (quiet,) = [r["sample"] for r in lines(guest, "bc-quiet.jsonl")]
    if before == after:
        files = dict(line.split(" ", 1) for line in before.splitlines())
        assert quiet["hits"] == int(files["stats_total/cache_hits"])
        assert quiet["misses"] == int(files["stats_total/cache_misses"])
        assert quiet["dirty_bytes"] == hprint(files["dirty_data"])


def test_bcache_stall_is_explained_then_the_flush_counts_down_to_clean(guest: GuestRun) -> None:
    stall = guest.read("bc-stall.err")
    print(stall)
    assert "no progress for" in stall
    assert "writeback_percent" in stall and "keeps writing" in stall
    flush = guest.read("bc-flush.txt")
    print(flush)
    amounts = [m for m in re.findall(r"dirty ([\d.]+ [KMG]iB|[\d]+ B)", flush)]
    assert amounts, "dirty data was shown while it was written back"
    assert flush.rstrip().endswith("clean, no dirty data left.")
    assert guest.read("bc-state-after.txt").strip() == "clean"


def test_fixture_sources_are_kept(guest: GuestRun) -> None:
    """The guest's dmsetup table and a dirty status line are the sampler's unit-test fixtures."""
    table = guest.read("dmsetup-table-cache.txt")
    assert re.search(r"labvg-data: 0 \d+ cache ", table)
    fixtures = Path(__file__).parents[1] / "fixtures" / "lab-watch"
    assert (fixtures / "dmsetup-table-cache.txt").exists()
