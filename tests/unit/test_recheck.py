"""The re-check after deployment (issue 31): the verdict from the kernel's counters, the prediction
and a trace of the same days; and the lvmcache resize plan it names, built from the lab's real
discovery snapshot (tests/fixtures/lab-caches); nothing runs."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import pytest

from advisor.advice.profile import Profile, trace_profile
from advisor.apply.state import LiveState, last_in_effect
from advisor.backends import BCACHE, LVMCACHE
from advisor.disks.collect import RawSystem
from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory
from advisor.health.recheck import Situation, observed, recheck, wilson
from advisor.plan.model import PlanError
from advisor.prediction import Prediction
from advisor.readers.lvm import Lv
from advisor.watch.recorded import RecordedSampler, Recording
from advisor.watch.sampler import CacheRef, Sample
from advisor.workload.analysis import analyze
from advisor.workload.traces import REQUEST, ImportStats, Trace
from cachewise.cli import main
from cachewise.core import Core
from cachewise.core.recheck import RecheckRequest
from cachewise.core.recheck import recheck as core_recheck
from recipes.common import RecipeError
from recipes.lvmcache import lvmcache_resize
from recipes.registry import makes_cache
from tests.conftest import FIXTURES

MiB = 1 << 20


def profile_of(blocks: np.ndarray[Any, Any], writes: float = 0.0) -> Profile:
    n = len(blocks)
    req = np.zeros(n, REQUEST)
    req["offset"] = blocks.astype(np.uint64) * 4096
    req["length"] = 4096
    req["t"] = np.arange(n) * 0.01
    req["write"] = np.random.default_rng(3).random(n) < writes
    return trace_profile(analyze(Trace(req, "fio", "synthetic", ImportStats(lines=n, requests=n))))


@functools.cache
def hot_set() -> Profile:
    """200,000 reads, Zipf 1.2 over 20,000 blocks (78 MiB): the hot data a few MiB."""
    r = np.random.default_rng(31)
    items = 20_000
    cdf = np.cumsum(np.arange(1, items + 1, dtype=np.float64) ** -1.2)
    cdf /= cdf[-1]
    return profile_of(r.permutation(items)[np.searchsorted(cdf, r.random(200_000))])


@functools.cache
def wide_hot_set() -> Profile:
    """Reads spread evenly over 16,384 blocks (64 MiB), read over and over: all of it is hot."""
    r = np.random.default_rng(32)
    return profile_of(r.integers(0, 16_384, 200_000))


@functools.cache
def read_once() -> Profile:
    """Blocks read once each, one in each 64 KiB chunk: nothing comes back, not even a chunk."""
    return profile_of(np.random.default_rng(33).permutation(200_000) * 16)


def samples(hit_ratio: float, lookups: int, *, start: float = 1000.0, steps: int = 10, used: int = 32 * MiB,
            capacity: int = 32 * MiB, mode: str = "writethrough") -> list[Sample]:
    out = []
    for i in range(steps + 1):
        n = lookups * i // steps
        hits = round(n * hit_ratio)
        out.append(Sample(start + 60 * i, "vg/data", "lvmcache", mode, "ok", "smq", capacity, used, 0,
                          hits, n - hits, read_hits=hits, read_misses=n - hits))
    return out


def situation(profile: Profile | None, capacity: int, obs: list[Sample], **kw: Any) -> Situation:
    return Situation("vg/data", kw.pop("backend", LVMCACHE), capacity, kw.pop("mode", "writethrough"), obs,
                     profile=profile, now=obs[-1].t, **kw)


# --- what the kernel counted ---

def test_the_read_hit_ratio_adds_each_step_and_counts_a_reset_from_zero() -> None:
    before = samples(0.2, 10_000)
    after = samples(0.8, 5_000, start=before[-1].t + 60)[1:]  # a reboot: the counters start at zero
    obs = observed(before + after)
    assert obs is not None
    assert obs.read_lookups == 15_000 and obs.read_hit_ratio == pytest.approx(6_000 / 15_000, abs=0.001)
    assert obs.low < 0.4 < obs.high and obs.high - obs.low < 0.05
    # from a baseline: the last sample at or before it
    late = observed(before + after, since=before[5].t + 1)
    assert late is not None and late.since == before[5].t and late.read_lookups == (10_000 - 5_000) + 5_000


def test_samples_of_another_cache_of_the_same_name_are_left_out() -> None:
    old = samples(0.1, 10_000, capacity=16 * MiB)
    new = samples(0.9, 10_000, start=old[-1].t + 60, capacity=48 * MiB)
    obs = observed(old + new)
    assert obs is not None and obs.read_lookups == 10_000 and obs.read_hit_ratio == pytest.approx(0.9, abs=0.001)


def test_bcache_counts_every_lookup_and_says_so() -> None:
    rows = [Sample(1000.0 + 60 * i, "bcache0", "bcache", "writeback", "clean", None, 64 * MiB, 32 * MiB, 0,
                   700 * i, 300 * i) for i in range(5)]
    v = recheck(situation(None, 64 * MiB, rows, backend=BCACHE, mode="writeback"))
    assert v.observed is not None and not v.observed.reads_only and v.observed.read_lookups == 4_000
    assert "reads and writes together" in v.reasons[0].text


def test_wilson_interval_narrows_with_the_count() -> None:
    lo1, hi1 = wilson(5, 10)
    lo2, hi2 = wilson(500, 1000)
    assert lo1 < lo2 < 0.5 < hi2 < hi1
    assert wilson(0, 0) == (0.0, 1.0)


def test_too_few_reads_is_cant_judge_with_the_range() -> None:
    v = recheck(situation(None, 32 * MiB, samples(0.5, 40)))
    assert v.action == "cant-judge" and v.range is not None
    assert v.range[0] < 0.5 < v.range[1] and v.range[1] - v.range[0] > 0.2
    assert "Can't judge yet" in v.summary and v.plan is None


def test_a_cache_still_warming_is_not_judged() -> None:
    obs = samples(0.1, 50_000)
    pred = Prediction(0.8, 16 * MiB, 600.0, 7200.0)
    v = recheck(situation(None, 32 * MiB, obs, prediction=pred, made_at=obs[0].t))
    assert v.action == "cant-judge" and "warming" in v.summary


# --- with a trace of the same days ---

def test_a_cache_too_small_for_its_hot_data_is_grown_with_a_resize_plan() -> None:
    prof = wide_hot_set()
    v = recheck(situation(prof, 8 * MiB, samples(0.12, 50_000, capacity=8 * MiB, used=8 * MiB),
                          room_bytes=200 * MiB))
    assert v.action == "grow", v
    assert v.size_bytes is not None and 60 * MiB <= v.size_bytes <= 200 * MiB
    assert v.curve_at_size is not None and v.curve_now is not None and v.curve_at_size > v.curve_now + 0.3
    assert v.plan == "lvmcache-resize" and v.options == {"lv": "vg/data", "size": v.size_bytes}
    assert any("L-SIZE-4" in r.findings for r in v.reasons)
    assert any("agree" in r.text for r in v.reasons)  # 12% counted, the curve says about as much


def test_growth_is_bounded_by_what_the_ssd_holds() -> None:
    v = recheck(situation(wide_hot_set(), 8 * MiB, samples(0.12, 50_000, capacity=8 * MiB), room_bytes=40 * MiB))
    assert v.action == "grow" and v.size_bytes == 40 * MiB


def test_a_cache_far_bigger_than_its_hot_data_is_shrunk() -> None:
    prof = hot_set()
    v = recheck(situation(prof, 1024 * MiB, samples(0.9, 50_000, capacity=1024 * MiB), room_bytes=2048 * MiB))
    assert v.action == "shrink", v
    assert v.size_bytes is not None and v.size_bytes < 512 * MiB
    assert v.curve_now is not None and v.curve_at_size is not None and v.curve_now - v.curve_at_size <= 0.02


def test_a_workload_that_never_rereads_is_told_to_remove_the_cache() -> None:
    v = recheck(situation(read_once(), 32 * MiB, samples(0.0, 50_000), room_bytes=200 * MiB))
    assert v.action == "remove" and v.plan == "remove" and v.options == {"device": "vg/data"}


def test_a_writeback_cache_that_sees_no_writes_is_switched_to_writethrough() -> None:
    prof = hot_set()
    v = recheck(situation(prof, 64 * MiB, samples(0.9, 50_000, capacity=64 * MiB, mode="writeback"),
                          mode="writeback", room_bytes=64 * MiB))
    assert v.action == "mode" and v.new_mode == "writethrough" and v.plan == "lvmcache-mode"
    assert any("T-MODE-1" in r.findings for r in v.reasons)


def test_a_fitting_cache_is_kept() -> None:
    prof = hot_set()
    knee_size = 64 * MiB
    v = recheck(situation(prof, knee_size, samples(0.9, 50_000, capacity=knee_size), room_bytes=knee_size))
    assert v.action == "keep", v


def test_bcache_gets_no_resize_plan_but_says_how() -> None:
    v = recheck(situation(wide_hot_set(), 8 * MiB, samples(0.12, 50_000, capacity=8 * MiB), backend=BCACHE,
                          room_bytes=200 * MiB))
    assert v.action == "grow" and v.plan is None and "bcache-detach" in v.how


# --- without a trace: the counters and the prediction ---

def test_without_a_trace_a_full_cache_short_of_its_prediction_grows_to_its_hot_data() -> None:
    obs = samples(0.3, 50_000, capacity=32 * MiB, used=32 * MiB)
    pred = Prediction(0.8, 100 * MiB, 60.0, 120.0)
    v = recheck(situation(None, 32 * MiB, obs, prediction=pred, made_at=obs[0].t - 3600, room_bytes=200 * MiB))
    assert v.action == "grow" and v.size_bytes == 112 * MiB  # its hot data and a tenth, in 4 MiB extents


def test_without_a_trace_a_shortfall_on_a_cache_with_room_left_is_not_guessed() -> None:
    obs = samples(0.3, 50_000, capacity=32 * MiB, used=16 * MiB)
    pred = Prediction(0.8, 100 * MiB, 60.0, 120.0)
    v = recheck(situation(None, 32 * MiB, obs, prediction=pred, made_at=obs[0].t - 3600))
    assert v.action == "cant-judge" and v.range is not None


def test_without_a_trace_a_cache_meeting_its_prediction_is_kept() -> None:
    obs = samples(0.78, 50_000)
    v = recheck(situation(None, 32 * MiB, obs, prediction=Prediction(0.8, 16 * MiB, 60.0, 120.0),
                          made_at=obs[0].t - 3600))
    assert v.action == "keep" and "as predicted" in v.summary
    assert v.to_json()["action"] == "keep"


# --- the resize plan, on what the lab's lvm2 made ---

@pytest.fixture(scope="module")
def layers() -> Inventory:
    return build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json"))


def test_a_resize_takes_the_cache_off_and_attaches_one_of_the_new_size(layers: Inventory) -> None:
    plan = lvmcache_resize(layers, "labvg/vault", 64 * MiB, ssd_path="/dev/sdb")
    plan.check()
    shapes = [s.argv[:3] for s in plan.steps]
    assert shapes[0] == ("lvconvert", "--yes", "--uncache")
    assert [s.argv[0] for s in plan.steps[1:]] == ["lvcreate", "lvcreate", "lvconvert", "lvconvert"]
    assert "65536k" in plan.steps[1].argv and "--cachemode" in plan.steps[3].argv
    assert plan.steps[3].argv[plan.steps[3].argv.index("--cachemode") + 1] == "writethrough"  # its own mode
    assert plan.steps[0].progress == "cache_dirty"  # the flush is counted down
    assert plan.devices[0].path == "/dev/labvg/vault" and plan.devices[1].size_bytes == 256 * MiB
    assert "from 16.0 MiB to 64.0 MiB" in plan.title
    assert makes_cache(plan.kind)  # recorded as made, so the watch follows the new cache


def test_a_resize_goes_on_the_ssd_its_pool_is_on(layers: Inventory) -> None:
    plan = lvmcache_resize(layers, "labvg/vault", 64 * MiB)
    assert plan.devices[1].serial == "SSD0001"


def test_a_resize_counts_the_space_other_lvs_take_on_the_ssd(layers: Inventory) -> None:
    # the SSD (256 MiB) also holds labvg/data's 32 MiB pool and its 8 MiB metadata, and LVM's label
    # and metadata area: 215 MiB stay for the new pool, its 8 MiB of metadata and their spare
    assert lvmcache_resize(layers, "labvg/vault", 196 * MiB, ssd_path="/dev/sdb").space["ssd_bytes_used"] == 212 * MiB
    with pytest.raises(RecipeError, match="too small"):
        lvmcache_resize(layers, "labvg/vault", 200 * MiB, ssd_path="/dev/sdb")


@pytest.mark.parametrize(("lv", "size", "ssd", "message"), [
    ("labvg/vault", 16 * MiB, "/dev/sdb", "already holds 16.0 MiB"),
    ("/dev/sda", 64 * MiB, None, "not a logical volume|not an LV"),
])
def test_resizes_that_cannot_be_planned_are_refused_in_a_sentence(layers: Inventory, lv: str, size: int,
                                                                   ssd: str | None, message: str) -> None:
    with pytest.raises(RecipeError, match=message) as err:
        lvmcache_resize(layers, lv, size, ssd_path=ssd)
    assert "Nothing was changed" in str(err.value)


# --- the application core and the CLI ---

def test_the_core_rechecks_a_recorded_cache_against_a_trace_and_makes_the_resize_plan(tmp_path) -> None:

    # the cache's reads: 6,144 blocks (24 MiB) read at random, 12 times each on average (fio iolog v3)
    r = np.random.default_rng(5)
    lines = ["fio version 3 iolog", "/dev/labvg/vault add", "/dev/labvg/vault open"]
    lines += [f"{i * 10_000} /dev/labvg/vault read {int(b) * 4096} 4096" for i, b in enumerate(r.integers(0, 6144, 75_000))]
    trace = tmp_path / "day1.iolog"
    trace.write_text("\n".join([*lines, "/dev/labvg/vault close", ""]))
    ref = CacheRef("dm-cache", "labvg/vault", "dm-4", "dm-7", "dm-5")
    full = Sample(1000.0, "labvg/vault", "dm-cache", "writethrough", "ok", "smq", 4 * MiB, 4 * MiB, 0, 300, 700,
                  read_hits=300, read_misses=700)
    raw = RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json")
    core = Core.for_recording(raw, RecordedSampler([Recording(ref, (full,), None)]))
    got = core_recheck(core, RecheckRequest("labvg/vault", trace, record=False))
    v = got.verdict
    assert v.action == "grow" and v.size_bytes is not None and 24 * MiB <= v.size_bytes <= 40 * MiB, v
    assert got.refused is None and got.plan is not None and got.plan.kind == "lvmcache-resize"
    assert got.plan.devices[1].serial == "SSD0001"  # the SSD its pool is on, shared with labvg/data's
    assert got.plan.prediction is not None and got.plan.prediction.hit_ratio == v.curve_at_size


def test_the_cli_names_what_it_cannot_recheck_in_one_sentence(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert main(["--state-dir", str(tmp_path), "recheck", "no-such-cache", "--json"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-cache" in err and "Traceback" not in err


def test_a_resize_is_not_taken_as_done_before_it_ran(layers: Inventory) -> None:
    """The cache before a resize is in the mode the new one will be: only the new pool's name
    tells them apart, and the run must start at the first step (in the lab a resize once
    reported every step "already done" and changed nothing)."""
    plan = lvmcache_resize(layers, "labvg/vault", 64 * MiB)
    before = LiveState(lvs={"labvg/vault": Lv("labvg", "vault", False, "cache", "writethrough", pool="vault_cache_cpool")})
    assert last_in_effect(plan, before) == -1
    after = LiveState(lvs={
        "labvg/vault": Lv("labvg", "vault", False, "cache", "writethrough", pool="vault_cache2_cpool"),
        "labvg/vault_cache2_cpool": Lv("labvg", "vault_cache2_cpool", True, "cache-pool"),
    })
    assert last_in_effect(plan, after) == len(plan.steps) - 1
    uncached = LiveState(lvs={"labvg/vault": Lv("labvg", "vault", False, "linear")})
    assert last_in_effect(plan, uncached) == 0  # a resume goes on after the uncache
    attach = plan.steps[-1]
    lying = dataclasses.replace(plan, steps=(*plan.steps[:-1], dataclasses.replace(attach, post=attach.post[:2])))
    with pytest.raises(PlanError, match="postconditions"):
        lying.check()
