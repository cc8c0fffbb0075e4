"""Recorded samples played back (advisor/watch/recorded.py), bcache's last known hit ratio with
its age, and `cachewise demo` headless (issue 30): the scenes are the lab's own recordings
(cachewise/core/data/demo-*.json, made by tests/vm/make_demo.py), played back through the same
session and figures as a live watch."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.errors import CachewiseError
from advisor.prediction import Prediction
from advisor.watch.figures import Tracker
from advisor.watch.recorded import RecordedSampler, Recording, RecordingError, load_json_lines, parse_json_lines
from advisor.watch.sampler import CacheRef, Sample
from cachewise.core import demo, watch
from cachewise.render import watch_line


def bc(t: float, hits: int, misses: int, dirty: int = 0) -> Sample:
    return Sample(t, "bcache0", "bcache", "writeback", "clean" if not dirty else "dirty", None, 100 << 20, 10 << 20,
                  dirty, hits, misses, raw={"backing_dev_name": "sdb"})


def test_bcache_keeps_the_hit_ratio_of_the_last_step_its_counters_moved_with_its_age() -> None:
    tr = Tracker()
    tr.add(bc(0, 100, 100))
    moved = tr.add(bc(1, 190, 110))  # the counters fold: 90 hits, 10 misses in this step
    assert moved.hit_ratio == pytest.approx(0.9) and moved.hit_ratio_last == pytest.approx(0.9)
    assert moved.hit_ratio_age_seconds == 0
    still = [tr.add(bc(t, 190, 110)) for t in (2, 3, 4)]  # bcache has not folded them again
    assert [f.hit_ratio for f in still] == [None, None, None]
    assert [f.hit_ratio_last for f in still] == [pytest.approx(0.9)] * 3
    assert [f.hit_ratio_age_seconds for f in still] == [1, 2, 3]
    assert "hit 90% 3 s ago" in watch_line(still[-1])
    # The next step is measured from the last one that moved, not from the sample before it.
    nxt = tr.add(bc(5, 200, 140))
    assert nxt.hit_ratio_last == pytest.approx(10 / 40) and nxt.hit_ratio_age_seconds == 0
    # Counters that went back (bcache re-registered) forget the last figure.
    assert tr.add(bc(6, 1, 1)).hit_ratio_last is None


def recording(n: int = 5, step: float = 0.5) -> Recording:
    samples = tuple(bc(1000 + i * step, 100 + 10 * i, 50 + i) for i in range(n))
    ref = CacheRef("bcache", "bcache0", "bcache0", "sdb", None)
    return Recording(ref, samples, Prediction(0.8, 1 << 20, None, None, applied_at=990.0))


def test_a_recording_plays_one_sample_a_call_in_its_own_time_then_holds_still() -> None:
    clock = iter([5000.0]).__next__
    s = RecordedSampler([recording()], clock=clock)
    ref = s.find("/dev/bcache0")
    assert s.find("sdb") == ref and s.caches() == [ref] and s.interval == 0.5
    got = [s.sample([ref])[0] for _ in range(7)]
    assert [x.t for x in got] == [5000.0, 5000.5, 5001.0, 5001.5, 5002.0, 5002.5, 5003.0]
    assert [x.hits for x in got] == [100, 110, 120, 130, 140, 140, 140]
    assert s.ended(ref)
    p = s.prediction(ref)
    assert p is not None and p.hit_ratio == 0.8 and p.applied_at == 4990.0
    with pytest.raises(CachewiseError) as err:
        s.find("vg0/data")
    assert "not among the recorded caches (bcache0)" in str(err.value)


def line(sample: Sample) -> str:
    return json.dumps({"schema": "cachewise.watch/1", "sample": sample.to_json(), "figures": {}})


def test_json_lines_of_watch_are_read_back_by_cache() -> None:
    text = "\n".join(line(bc(t, 10 * t, 5)) for t in (3, 1, 2)) + "\n\n"
    (rec,) = parse_json_lines(text)
    assert rec.ref.name == "bcache0" and rec.ref.origin == "sdb"
    assert [s.t for s in rec.samples] == [1, 2, 3]


BAD = [
    ("", "holds no sample"),
    ("not json\n", "line 1 is not JSON"),
    ('{"schema": "cachewise.scan/1"}\n', "line 1 is not a recorded sample"),
    ('{"schema": "cachewise.watch/1", "sample": 3}\n', "not a sample object"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": 1, "target": "x", "kind": "flashcache"}}\n', "cache kind"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": "now", "target": "x", "kind": "bcache"}}\n', "has no time"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": 1, "target": "", "kind": "bcache"}}\n', "names no cache"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": 1, "target": "x", "kind": "bcache"}}\n', "line 1"),
    (line(bc(1, -5, 1)) + "\n", "not a count"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": 1, "target": "x", "kind": "bcache", "promotions": "9"}}\n',
     "promotions that is not a count"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": 1, "target": "x", "kind": "bcache", '
     '"device_io": {"reads": "1", "read_sectors": 0, "writes": 0, "write_sectors": 0}}}\n', "device_io"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": 1, "target": "x", "kind": "bcache", "mode": 5}}\n',
     "mode that is not a word"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": 1e300, "target": "x", "kind": "bcache"}}\n', "has no time"),
    ('{"schema": "cachewise.watch/1", "sample": {"t": 1, "target": "x", "kind": "bcache", "raw": {"a": 1}}}\n',
     "raw readings"),
    (line(bc(1000, 1, 1)) + "\n" + line(bc(1_000_000, 2, 2)) + "\n", "gap of"),
    ('{"schema": "cachewise.watch/1", "sample": ' + "[" * 5000 + "]" * 5000 + "}\n", "line 1"),
]


@pytest.mark.parametrize(("text", "said"), BAD)
def test_a_bad_recording_is_refused_in_one_sentence(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text(text)
    with pytest.raises(RecordingError) as err:
        load_json_lines(path)
    msg = str(err.value)
    assert said in msg and str(path) in msg and "\n" not in msg


def test_a_recording_sampled_very_fast_is_played_at_a_sane_pace() -> None:
    (rec,) = parse_json_lines("\n".join(line(bc(1000 + i * 1e-6, i, 1)) for i in range(5)))
    assert rec.interval == 0.05


def test_a_missing_or_special_file_is_refused(tmp_path: Path) -> None:
    for path in (tmp_path / "absent.jsonl", tmp_path):
        with pytest.raises(RecordingError):
            load_json_lines(path)


@pytest.mark.parametrize("name", list(demo.SCENES))
def test_each_demo_scene_plays_through_a_watch_session(name: str) -> None:
    scene = demo.scene(name)
    assert scene.core.recorded and scene.core.replay and scene.core.prober is None and scene.core.state_dir is None
    assert watch.caches(scene.core) == [scene.watch]
    n = demo.length(scene.core, scene.watch)
    assert n >= 20
    session = watch.session(scene.core, [scene.watch], record=False)
    figs = [f for tick in session.follow(0.0, count=n) for _, f in tick.figures]
    assert len(figs) == n and all(b.t > a.t for a, b in zip(figs, figs[1:], strict=False))
    assert demo.ended(scene.core, scene.watch)
    if name == "warmup":  # an lvmcache made from a recommendation: the prediction is compared
        assert scene.watch.kind == "dm-cache"
        assert all(f.predicted_hit_ratio is not None for f in figs)
        assert figs[-1].fill is not None and figs[-1].fill > figs[0].fill
        assert any(f.read_hit_ratio is not None and f.read_hit_ratio > 0.5 for f in figs)
    else:  # a bcache whose flush stalls, then counts down to clean
        assert scene.watch.kind == "bcache"
        assert any(f.stall is not None for f in figs)
        assert any(f.flush_eta_seconds and f.dirty_bytes for f in figs)
        assert figs[-1].dirty_bytes == 0


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cachewise", *args], check=False, capture_output=True, text=True,
                          timeout=120,
                          stdin=subprocess.DEVNULL)


def test_demo_prints_the_flush_as_watch_would() -> None:
    out = run("demo", "--scene", "flush", "--text")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    samples = [x for x in lines if re.match(r"\d\d:\d\d:\d\d bcache0 ", x)]
    assert len(samples) >= 20
    assert any("left" in x and "dirty" in x for x in lines)  # the countdown
    assert any("stalled" in x.lower() or "writeback_percent" in x for x in lines)  # the stall, explained
    # The recording ends with no dirty data left, while bcache's state still says dirty (about 30 s).
    assert "no dirty data, bcache still says dirty" in lines[-1]


def test_demo_json_lines_are_watch_json_lines_and_play_back() -> None:
    out = run("demo", "--scene", "warmup", "--json-lines")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(x) for x in out.stdout.splitlines()]
    assert rows and all(r["schema"] == "cachewise.watch/1" for r in rows)
    assert rows[-1]["figures"]["predicted_hit_ratio"] is not None
    (rec,) = parse_json_lines(out.stdout)  # what --json-lines writes, --replay-samples reads
    assert rec.ref.name == "labvg/data" and len(rec.samples) == len(rows)


def test_the_demo_without_a_terminal_says_what_to_do() -> None:
    out = run("demo")
    assert out.returncode != 0 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "--text" in out.stderr and "Nothing was changed" in out.stderr


def test_tui_replay_samples_refuses_a_bad_file_in_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text("garbage\n")
    out = subprocess.run([sys.executable, "-m", "cachewise", "tui", "--replay-samples", str(bad)],
                         check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "is not a recording of cache samples: line 1 is not JSON" in out.stderr, out.stderr
