"""Miss-ratio curves and hot-data ratios against a plain LRU simulation (the definition)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from advisor.workload import mrc


def lru_hit_ratio(trace: list[int], size: int) -> float:
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for block in trace:
        if block in cache:
            hits += 1
            cache.move_to_end(block)
        else:
            cache[block] = None
            if len(cache) > size:
                cache.popitem(last=False)
    return hits / len(trace)


def zipf_trace(n: int, universe: int, a: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = np.arange(1, universe + 1, dtype=np.float64) ** -a
    cdf = np.cumsum(weights) / weights.sum()
    return rng.permutation(universe)[np.searchsorted(cdf, rng.random(n))].astype(np.int64)


def test_stack_distances_by_hand() -> None:
    trace = np.array([7, 8, 9, 7, 8, 8, 1, 7], dtype=np.int64)
    assert mrc.stack_distances(trace).tolist() == [-1, -1, -1, 2, 2, 0, -1, 2]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exact_curve_equals_lru_simulation_at_every_size(seed: int) -> None:
    trace = zipf_trace(4000, 400, 0.9, seed)
    sizes = np.arange(1, 420, dtype=np.int64)
    curve = mrc.exact_curve(trace, sizes)
    expected = [lru_hit_ratio(trace.tolist(), int(s)) for s in sizes]
    assert np.allclose(curve.hit_ratio, expected, atol=1e-12, rtol=0)


def test_hot_data_ratio_counts_exactly() -> None:
    counts = np.array([5, 50, 10, 30, 5], dtype=np.int64)
    hot = mrc.hot_data(counts, (0.8, 0.9, 0.95, 0.99))
    assert hot.blocks_needed == (2, 3, 4, 5)
    assert hot.footprint_fraction == (0.4, 0.6, 0.8, 1.0)


def test_zipf_exponent_is_recovered() -> None:
    trace = zipf_trace(2_000_000, 500_000, 1.2, 7)
    alpha = mrc.zipf_exponent(mrc.block_counts(trace))
    assert alpha is not None and abs(alpha - 1.2) < 0.08
    # Zipf 1.2 sends about 90% of accesses to about 10% of the data (L-SIZE-1), or less.
    assert mrc.hot_data(mrc.block_counts(trace), (0.9,)).footprint_fraction[0] < 0.1


def test_default_sizes_span_a_thousandth_to_all_of_the_footprint() -> None:
    sizes = mrc.default_sizes(1_000_000)
    assert sizes[0] == 1_000 and sizes[-1] == 1_000_000 and len(sizes) >= 50
    assert np.all(np.diff(sizes) > 0)


def test_shards_at_full_rate_is_exact() -> None:
    trace = zipf_trace(20_000, 2_000, 1.0, 4)
    sizes = mrc.default_sizes(2_000)
    exact = mrc.exact_curve(trace, sizes)
    full = mrc.lru_curve(trace, sizes, "shards", rate=1.0)
    assert full.samples == len(mrc.SALTS)
    assert np.allclose(full.hit_ratio, exact.hit_ratio, atol=1e-12)


def test_shards_tracks_the_exact_curve_under_zipf() -> None:
    trace = zipf_trace(2_000_000, 500_000, 1.2, 5)
    sizes = mrc.default_sizes(len(np.unique(trace)))
    exact = mrc.exact_curve(trace, sizes)
    sampled = mrc.lru_curve(trace, sizes, "shards")
    assert sampled.mode == "shards" and sampled.rate == pytest.approx(0.1, rel=1e-3)
    assert np.abs(sampled.hit_ratio - exact.hit_ratio).mean() < 0.005


def test_streaming_chunks_equal_one_feed() -> None:
    trace = zipf_trace(300_000, 50_000, 1.1, 8)
    sizes = mrc.default_sizes(50_000)
    whole = mrc.ShardsSampler(0.05)
    whole.feed(trace)
    chunked = mrc.ShardsSampler(0.05)
    for chunk in np.array_split(trace, 7):
        chunked.feed(chunk)
    assert np.array_equal(whole.curve(sizes).hit_ratio, chunked.curve(sizes).hit_ratio)


def test_auto_mode_is_exact_for_small_traces() -> None:
    trace = zipf_trace(1_000, 100, 1.0, 6)
    assert mrc.lru_curve(trace, mrc.default_sizes(100)).mode == "exact"


def test_short_traces_interpreted_match_the_compiled_loop() -> None:
    """Under INTERPRETED_LIMIT the stack-distance loop runs without numba; same answers."""
    import numpy as np

    from advisor.workload import mrc

    blocks = np.random.default_rng(3).integers(0, 500, mrc.INTERPRETED_LIMIT // 4).astype(np.int64)
    dense = np.unique(blocks, return_inverse=True)[1].astype(np.int64)
    interpreted = mrc.stack_distances(blocks)
    compiled = mrc._compiled()(dense, int(dense.max()) + 1)
    assert np.array_equal(interpreted, compiled)


def test_steady_curve_counts_only_accesses_after_each_size_is_full() -> None:
    """mrc.steady_from_distances against a direct count: an LRU cache of s blocks is full from
    the s-th first touch; hits over the accesses after that (slice-rounded), never falling."""
    rng = np.random.default_rng(8)
    ranks = np.minimum(rng.zipf(1.1, 60_000), 50_000)
    d = mrc.stack_distances(ranks.astype(np.int64))
    sizes = mrc.default_sizes(len(np.unique(ranks)))
    steady = mrc.steady_from_distances(d, sizes)
    cold = np.flatnonzero(d < 0)
    edges = np.linspace(0, len(d), mrc.STEADY_SLICES + 1).astype(np.int64)
    for j in (5, 20, 40):
        start = edges[np.searchsorted(edges, cold[sizes[j] - 1] + 1)]
        after = d[start:]
        assert steady[j] == pytest.approx(np.count_nonzero((after >= 0) & (after < sizes[j])) / len(after))
    raw = mrc.exact_curve(ranks.astype(np.int64), sizes).hit_ratio
    assert np.all(np.diff(steady) >= 0) and np.all(steady >= raw - 1e-9)
    # Sizes past what the trace fills keep the largest filled size's value.
    assert steady[-1] == steady[-2]
