"""Workload analysis of a real fio iolog: footprint, mix, curve and hot data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from advisor.workload.analysis import analyze, to_blocks
from advisor.workload.traces import REQUEST, load_trace
from tests.conftest import FIXTURES


def test_requests_split_into_cache_blocks() -> None:
    req = np.array([(0.0, 0, 4096, 0), (0.0, 4096 * 3 + 100, 8192, 1), (0.0, 65536, 1, 0)], dtype=REQUEST)
    assert to_blocks(req, 4096).tolist() == [0, 3, 4, 5, 16]
    assert to_blocks(req, 32768).tolist() == [0, 0, 2]


def test_analysis_of_a_fio_zipf_run() -> None:
    result = analyze(load_trace(FIXTURES / "traces" / "fio-v3.iolog"))
    assert (result.requests, result.read_requests, result.write_requests) == (4000, 2764, 1236)
    assert result.read_bytes == 2764 * 4096 and result.size_histogram == {"<= 4 KiB": 4000}
    assert result.footprint_blocks == len(np.unique(load_trace(FIXTURES / "traces" / "fio-v3.iolog").requests["offset"]))
    assert result.curve_mode == "exact" and len(result.curve_sizes_blocks) >= 40
    hits = np.asarray(result.curve_hit_ratio)
    assert np.all(np.diff(hits) >= 0), "LRU hit ratio never falls as the cache grows"
    # All of the footprint cached: every access but the first touch of each block hits.
    assert hits[-1] == pytest.approx(1 - result.footprint_blocks / 4000)
    # Zipf 1.2 is skewed: a small part of the footprint serves most accesses.
    assert result.hot_footprint_fraction[0] < 0.5 and result.hot_footprint_fraction == sorted(result.hot_footprint_fraction)
    assert result.sequential_share < 0.05


def test_block_size_must_be_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        analyze(load_trace(FIXTURES / "traces" / "fio-v3.iolog"), block_size=3000)


def test_streamed_analysis_agrees_with_the_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from advisor.workload.analysis import analyze_stream
    from advisor.workload.traces import ImportStats, iter_cachewise, write_trace

    trace = load_trace(FIXTURES / "traces" / "fio-v3.iolog")
    path = tmp_path / "t.cwtrace"
    write_trace(path, trace.requests, {})
    whole = analyze(trace)
    streamed = analyze_stream(iter_cachewise(path, chunk=333), 4000, 4096, str(path), "cachewise", ImportStats())
    for key in ("requests", "read_requests", "write_bytes", "footprint_blocks", "sequential_share",
                "size_histogram", "hot_blocks", "zipf_alpha"):
        assert getattr(streamed, key) == getattr(whole, key), key
    assert streamed.curve_mode == "shards" and streamed.curve_sizes_blocks == whole.curve_sizes_blocks
    # 4,000 requests: every block is sampled (rate 1), so SHARDS equals the exact curve here.
    assert np.allclose(streamed.curve_hit_ratio, whole.curve_hit_ratio, atol=1e-6)


def test_request_figures_made_while_reading_are_those_of_the_whole_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.workload import analysis, fastparse
    from advisor.workload.analysis import analyze_path

    rng = np.random.default_rng(8)
    lines = ["fio version 3 iolog", "0 /dev/sdb add"]
    for i in range(6000):
        if 2000 <= i < 3000:  # a long sequential read, bypassed
            offset, length = (1 << 30) + (i - 2000) * 65536, 65536
        else:
            offset, length = int(rng.zipf(1.3) % 3000) * 4096, int(rng.choice([4096, 8192]))
        lines.append(f"{i * 1000} /dev/sdb {'write' if rng.random() < 0.3 else 'read'} {offset} {length}")
    path = tmp_path / "t.iolog"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(analysis, "FEED_CHUNK", 500)  # the follower feeds twelve slices
    monkeypatch.setattr(fastparse, "BLOCK", 4096)  # and is offered requests after each block
    monkeypatch.setattr("advisor.workload.traces.COMPILED_FROM", 0)
    offered: list[int] = []
    real = analysis._Follower.offer
    monkeypatch.setattr(analysis._Follower, "offer", lambda self, r: (offered.append(len(r)), real(self, r))[1])
    followed, _ = analyze_path(path)
    whole = analyze(load_trace(path))
    assert len(offered) > 20 and whole.bypassed_requests > 0
    assert followed.to_json() == whole.to_json()


def test_the_compiled_tally_gives_numpys_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.workload import analysis

    rng = np.random.default_rng(9)
    req = np.zeros(50_000, REQUEST)
    req["t"] = np.cumsum(rng.exponential(1e-3, len(req)))
    req["offset"] = rng.integers(0, 1 << 30, len(req)) * 512
    req["length"] = rng.choice([512, 4096, 8192, 65536, 1 << 20, 3 << 20], len(req))
    req["write"] = rng.random(len(req)) < 0.4
    figures = []
    for tallied_from in (0, len(req)):
        monkeypatch.setattr(analysis, "TALLIED_FROM", tallied_from)
        summary = analysis._Summary()
        summary.feed_requests(req)
        figures.append((summary.requests, summary.reads, summary.writes, summary.read_bytes, summary.write_bytes,
                        summary.sizes.tolist(), summary.t_min, summary.t_max, summary.backlog.tolist()))
    assert figures[0] == figures[1]
