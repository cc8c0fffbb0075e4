"""The sampler, its figures, the history of samples and the exports, on outputs captured in the
lab (tests/fixtures/lab-readers/, tests/fixtures/lab-watch/) and a sysfs tree built from them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.history import History
from advisor.prediction import Prediction as _Prediction
from advisor.runner import CommandResult
from advisor.watch.export import prometheus_text
from advisor.watch.figures import FlushMeter, Prediction, Tracker
from advisor.watch.sampler import CacheRef, Io, Sample, Sampler, WatchError, _lvm_name
from advisor.watch.textfile import write_textfile
from cachewise import cli
from cachewise.cli import common
from cachewise.core import Core, watch
from tests.unit.fakesys import CACHE_LINE, TABLE, WC_LINE, make_sys, many

prediction_from_config = _Prediction.from_config

FIXTURES = Path(__file__).parents[1] / "fixtures"
WATCH = FIXTURES / "lab-watch"


class DmRunner:
    """Replays dmsetup's table and status of every device, as captured in the lab."""

    def __init__(self, table: str, status: str) -> None:
        self.table, self.status, self.calls = table, status, 0

    def which(self, tool: str) -> str | None:
        return f"/sbin/{tool}"

    def run(self, argv: list[str], timeout: float | None = None, check: bool = True) -> CommandResult:
        self.calls += 1
        out = {"table": self.table, "status": self.status}[argv[1]]
        return CommandResult(tuple(argv), 0, out, "", 0.01)


@pytest.fixture
def sampler(tmp_path: Path) -> Sampler:
    if (WATCH / "dmsetup-table-cache.txt").exists():
        assert " cache " in (WATCH / "dmsetup-table-cache.txt").read_text()
    status = f"labvg-data: {CACHE_LINE}\nlabvg-wc: {WC_LINE}\nother: 0 8 linear\n"
    return Sampler(DmRunner(TABLE, status), make_sys(tmp_path), clock=lambda: 1000.0)  # type: ignore[arg-type]


def test_finds_every_cache_with_its_devices(sampler: Sampler) -> None:
    found = sampler.caches()
    caches = {c.name: c for c in found}
    assert set(caches) == {"labvg/data", "labvg/wc", "bcache0"}
    assert len(found) == 3, "each cache once: bcache0/bcache is its backing device's own directory (the lab saw two)"
    dm = caches["labvg/data"]
    assert (dm.kind, dm.device, dm.origin, dm.cache, dm.dm_name) == ("dm-cache", "dm-0", "dm-3", "dm-1", "labvg-data")
    wc = caches["labvg/wc"]
    assert (wc.kind, wc.origin, wc.cache, wc.block_bytes) == ("dm-writecache", "dm-4", "dm-5", 4096)
    bc = caches["bcache0"]
    assert (bc.kind, bc.device, bc.origin, bc.cache) == ("bcache", "bcache0", "sdd", "sde")


@pytest.mark.parametrize("name", ["labvg/data", "/dev/labvg/data", "/dev/mapper/labvg-data", "dm-0", "/dev/dm-0"])
def test_a_cache_is_found_by_any_of_its_names(sampler: Sampler, name: str) -> None:
    assert sampler.find(name).name == "labvg/data"


def test_a_bcache_is_found_by_its_backing_device(sampler: Sampler) -> None:
    assert sampler.find("/dev/sdd").name == sampler.find("bcache0").name == "bcache0"


def test_an_unknown_target_is_refused_with_the_caches_found(sampler: Sampler) -> None:
    with pytest.raises(WatchError, match=r"vg/nothing is not a cache on this machine \(caches found: bcache0, "
                       r"labvg/data, labvg/wc\); nothing was read"):
        sampler.find("vg/nothing")


def test_dirty_writeback_status_captured_while_a_writer_ran() -> None:
    from advisor.readers.dmstatus import CacheStatus

    s = CacheStatus.parse((WATCH / "dmsetup-status-dirty.txt").read_text())
    assert (s.mode, s.dirty, s.core_args["migration_threshold"]) == ("writeback", 19, "65536")


def test_bcache_sample_matches_the_lab_files(tmp_path: Path) -> None:
    from advisor.readers.bcache import BcacheState

    files = json.loads((WATCH / "bcache-watch-raw.json").read_text())
    st = BcacheState.parse(files)
    assert (st.state, st.cache_mode, st.dirty_bytes, st.writeback_rate_bytes) == ("clean", "writeback", 0, 512 * 1024)
    assert st.stats["stats_total"].hits == 30153


def test_dm_cache_sample_is_the_status_line(sampler: Sampler) -> None:
    (s,) = sampler.sample([sampler.find("labvg/data")])
    block = 128 * 512
    assert (s.kind, s.mode, s.policy, s.state) == ("dm-cache", "writeback", "smq", "dirty")
    assert (s.used_bytes, s.capacity_bytes, s.dirty_bytes) == (211 * block, 2048 * block, 41 * block)
    assert (s.read_hits, s.read_misses, s.write_hits, s.write_misses) == (1538, 1111, 337, 284)
    assert (s.hits, s.misses, s.demotions, s.promotions) == (1538 + 337, 1111 + 284, 0, 211)
    assert s.raw == {"status": CACHE_LINE}
    assert s.device_io == Io(400, 800, 40, 160) and s.origin_io is not None and s.cache_io is not None


def test_writecache_sample(sampler: Sampler) -> None:
    (s,) = sampler.sample([sampler.find("labvg/wc")])
    assert (s.kind, s.state, s.capacity_bytes) == ("dm-writecache", "dirty", 16320 * 4096)
    assert s.used_bytes == s.dirty_bytes == (16320 - 8176) * 4096
    assert s.writeback_bytes == 144 * 4096 and s.errors == 0


def test_bcache_sample_from_sysfs(sampler: Sampler) -> None:
    (s,) = sampler.sample([sampler.find("bcache0")])
    assert (s.kind, s.mode, s.state) == ("bcache", "writeback", "dirty")
    assert (s.hits, s.misses, s.bypass_hits) == (6303, 1220, 0)
    assert s.dirty_bytes == int(2.8 * 1024 * 1024)
    assert s.capacity_bytes == 655360 * 512 and s.used_bytes == 655360 * 512 * 25 // 100
    assert s.writeback_percent == 10
    assert s.raw["stats_total/cache_hits"] == "6303" and s.raw["priority_stats/Unused"] == "75"


def test_bcache_fill_is_read_only_every_fill_every_seconds(tmp_path: Path) -> None:
    now = [1000.0]
    sampler = Sampler(DmRunner("", ""), make_sys(tmp_path), fill_every=10, clock=lambda: now[0])  # type: ignore[arg-type]
    ref = sampler.find("bcache0")
    stats = tmp_path / "sys" / "fs" / "bcache" / "8555-set" / "cache0" / "priority_stats"
    assert sampler.sample([ref])[0].used_bytes == 655360 * 512 * 25 // 100
    stats.write_text("Unused:\t\t50%\n")
    now[0] += 5
    assert "priority_stats/Unused" not in sampler.sample([ref])[0].raw
    now[0] += 5
    assert sampler.sample([ref])[0].used_bytes == 655360 * 512 // 2


def test_one_dmsetup_status_per_tick_for_all_dm_caches(sampler: Sampler) -> None:
    refs = sampler.caches()
    runner = sampler.runner
    before = runner.calls  # type: ignore[attr-defined]
    assert len(sampler.sample(refs)) == 3
    assert runner.calls - before == 1  # type: ignore[attr-defined]


def test_a_gone_cache_is_left_out(sampler: Sampler) -> None:
    ref = sampler.find("labvg/data")
    sampler.runner = DmRunner(TABLE, "")  # type: ignore[assignment]
    assert sampler.sample([ref]) == []


@pytest.mark.parametrize(("dm", "lvm"), [("labvg-data", "labvg/data"), ("my--vg-my--lv", "my-vg/my-lv"),
                                         ("vg-lv--x", "vg/lv-x"), ("plain", "plain")])
def test_lvm_names_from_dm_names(dm: str, lvm: str) -> None:
    assert _lvm_name(dm) == lvm


def sample(t: float, hits: int, misses: int, used: int, dirty: int = 0, promotions: int = 0, writes: int = 0,
           **kw: object) -> Sample:
    return Sample(t, "vg/lv", "dm-cache", "writethrough", "ok", "smq", 1000 * 65536, used * 65536, dirty * 65536,
                  hits, misses, read_hits=hits, read_misses=misses, promotions=promotions, block_bytes=65536,
                  device_io=Io(hits + misses, 0, writes, 0), **kw)  # type: ignore[arg-type]


def test_tracker_hit_ratio_per_interval_and_since_start() -> None:
    tr = Tracker()
    first = tr.add(sample(0, 100, 100, 10))
    assert first.hit_ratio is None and first.hit_ratio_total is None
    f = tr.add(sample(1, 190, 110, 20))
    assert f.hit_ratio == pytest.approx(0.9) and f.hit_ratio_total == pytest.approx(0.9)
    f = tr.add(sample(2, 200, 200, 30))
    assert f.hit_ratio == pytest.approx(10 / 100) and f.hit_ratio_total == pytest.approx(100 / 200)
    assert f.fill == pytest.approx(0.03) and f.fill_rate_bytes == pytest.approx(10 * 65536)


def test_tracker_restarts_its_baseline_when_counters_go_back() -> None:
    tr = Tracker()
    tr.add(sample(0, 500, 500, 10))
    f = tr.add(sample(1, 10, 10, 10))  # the table was reloaded
    assert f.hit_ratio is None and f.hit_ratio_total is None
    assert tr.add(sample(2, 20, 10, 10)).hit_ratio == pytest.approx(1.0)


def test_warmup_eta_from_the_observed_promotion_rate_and_the_prediction() -> None:
    p = Prediction(hit_ratio=0.8, hot_bytes=500 * 65536, seconds_63=100, seconds_95=300, applied_at=-100)
    tr = Tracker(p)
    tr.add(sample(0, 0, 0, 100, promotions=100))
    f = tr.add(sample(10, 50, 50, 200, promotions=200))  # 10 blocks a second
    assert f.warmup == "filling"
    assert f.warmup_eta_seconds == pytest.approx((500 - 200) / 10)
    assert f.predicted_eta_seconds == pytest.approx(300 - 110)
    assert f.predicted_hit_ratio == 0.8
    f = tr.add(sample(20, 100, 60, 480, promotions=480))
    assert f.warmup == "steady" and f.warmup_eta_seconds == 0


def test_a_cache_that_stopped_filling_is_steady() -> None:
    tr = Tracker(window=10)
    for t in range(0, 12):
        f = tr.add(sample(t, 10 * t, 5, 300))
    assert f.warmup == "steady" and f.warmup_eta_seconds is None


def test_flush_rate_eta_and_stall() -> None:
    m = FlushMeter(window=10, stall_seconds=30)
    assert m.add(0, 1000).eta_seconds is None
    p = m.add(10, 800)
    assert p.rate == pytest.approx(20) and p.eta_seconds == pytest.approx(40) and p.stalled_seconds is None
    for t in range(11, 40):
        p = m.add(t, 800 + t % 3)
    assert p.stalled_seconds is None
    p = m.add(41, 805)
    assert p.stalled_seconds == pytest.approx(31)
    assert m.add(42, 0).eta_seconds == 0.0


def test_a_stall_names_the_causes_that_fit() -> None:
    tr = Tracker(stall_seconds=5)
    figures = [tr.add(Sample(t, "bcache0", "bcache", "writeback", "dirty", None, 1 << 30, 1 << 28, 50 << 20,
                             10, 10, writeback_percent=10, device_io=Io(0, 0, 10 * t, 0)))
               for t in range(0, 8)]
    assert figures[3].stall is None
    stall = figures[-1].stall
    assert stall is not None and stall.seconds >= 5
    text = " ".join(stall.causes)
    assert "writeback_percent (10%)" in text and "keeps writing" in text


def test_a_dm_cache_stall_without_writers_names_migration_threshold() -> None:
    tr = Tracker(stall_seconds=2)
    for t in range(5):
        f = tr.add(sample(t, 10, 10, 100, dirty=40))
    assert f.stall is not None
    assert not any("keeps writing" in c for c in f.stall.causes)
    assert any("migration_threshold" in c for c in f.stall.causes)


def test_history_records_thins_and_reads_samples(tmp_path: Path) -> None:
    day = 86400.0
    now = 100 * day
    with History(tmp_path / "h.sqlite3") as h:
        h.record_samples([sample(now - 2 * day + i, i, 0, 1) for i in range(180)])  # 3 minutes, a second apart
        h.record_samples([sample(now - 60 + i, i, 0, 1) for i in range(60)])
        assert len(h.samples("vg/lv")) == 240
        removed = h.thin_samples(now)
        left = h.samples("vg/lv")
        assert (removed, len(left)) == (177, 63)
        old = [s for s in left if s.t < now - day]
        assert [s.hits for s in old] == [59, 119, 179], "the newest sample of each minute is kept"
        assert h.samples("vg/lv", since=now - 60)[0].hits == 0
        assert h.samples("other") == []


def test_history_keeps_predictions_of_caches_made(tmp_path: Path) -> None:
    p = Prediction(0.7, 1 << 30, 60.0, 180.0, 0.125)
    with History(tmp_path / "h.sqlite3") as h:
        h.record_cache("/dev/vg/lv", "lvmcache-attach", p, 500.0)
        h.record_cache("/dev/disk/by-id/x", "bcache-create", None, 600.0)
        assert h.made_caches() == [("/dev/disk/by-id/x", 600.0, None), ("/dev/vg/lv", 500.0, p)]


def test_prediction_from_a_recommendations_config() -> None:
    cfg = {"backend": "lvmcache", "effective_bytes": 1 << 20, "predicted_hit_ratio": 0.81,
           "warmup": {"hot_blocks": 1000, "seconds_63": 12.5, "seconds_95": 40.0, "promotion_probability": 0.125}}
    assert prediction_from_config(cfg) == Prediction(0.81, 1 << 20, 12.5, 40.0, 0.125)
    assert prediction_from_config({"backend": "lvmcache", "warmup": None}) is None
    # hot_blocks counts dm-cache's chunks when the warm-up says so.
    chunks = {**cfg, "effective_bytes": 1 << 30, "warmup": {**cfg["warmup"], "block_bytes": 65536}}  # type: ignore[dict-item]
    assert prediction_from_config(chunks) == Prediction(0.81, 1000 * 65536, 12.5, 40.0, 0.125)


def test_prometheus_textfile_is_written_atomically(tmp_path: Path) -> None:
    text = prometheus_text([sample(1, 7, 3, 10, dirty=2)])
    # prometheus_client writes the text format: labels sorted, values as floats ("7.0")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert [(s.labels, s.value) for s in families["cachewise_cache_hits"].samples] == [({"target": "vg/lv"}, 7)]
    assert [(s.labels, s.value) for s in families["cachewise_cache_info"].samples] == [
        ({"target": "vg/lv", "kind": "dm-cache", "mode": "writethrough", "state": "ok", "policy": "smq"}, 1)]
    assert "# TYPE cachewise_cache_dirty_bytes gauge" in text
    path = tmp_path / "cachewise.prom"
    write_textfile(path, text)
    write_textfile(path, text)
    assert path.read_text() == text and os.listdir(tmp_path) == ["cachewise.prom"]


def test_sample_json_round_trip() -> None:
    s = sample(1, 2, 3, 4)
    assert Sample.from_json(json.loads(json.dumps(s.to_json()))) == s


def core_with(sampler: Sampler, state: Path) -> Core:
    core = Core.for_machine(state)
    core._sampler = sampler
    return core


def test_cli_status_json_and_table(sampler: Sampler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(common, "core_for", lambda args: core_with(sampler, tmp_path / "state"))
    assert cli.main(["status", "--json", "--prometheus", str(tmp_path / "c.prom")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in data["caches"]] == ["bcache0", "labvg/data", "labvg/wc"]
    assert data["caches"][1]["hit_ratio"] == pytest.approx(1875 / 3270)
    assert "cachewise_cache_info" in (tmp_path / "c.prom").read_text()
    assert cli.main(["status"]) == 0
    assert "labvg/data" in capsys.readouterr().out


def test_cli_watch_json_lines_records_samples(sampler: Sampler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(common, "core_for", lambda args: core_with(sampler, tmp_path / "state"))
    assert cli.main(["watch", "labvg/data", "--json-lines", "--count", "3", "--interval", "0.01"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == 3 and records[0]["schema"] == "cachewise.watch/1"
    assert records[0]["sample"]["raw"]["status"] == CACHE_LINE
    with History.open_default(tmp_path / "state") as h:
        assert len(h.samples("labvg/data")) == 3


def test_cli_watch_until_clean_stops_when_the_cache_goes(sampler: Sampler, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    core = core_with(sampler, tmp_path / "state")
    monkeypatch.setattr(common, "core_for", lambda args: core)
    ref = sampler.find("labvg/data")
    monkeypatch.setattr(sampler, "find", lambda target: ref)
    sampler.runner = DmRunner(TABLE, "")  # type: ignore[assignment]
    assert cli.main(["watch", "labvg/data", "--until-clean", "--interval", "0.01"]) == 0
    assert "labvg/data is no longer a cache on this machine." in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["watch", "vg/none"], "vg/none is not a cache on this machine"),
    (["watch", "labvg/data", "--duration", "forever"], "--duration"),
    (["watch", "labvg/data", "--prometheus", "/nonexistent/dir/c.prom"], "missing or not writable"),
])
def test_cli_watch_refusals(sampler: Sampler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    monkeypatch.setattr(common, "core_for", lambda args: core_with(sampler, tmp_path / "state"))
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_prediction_of_a_cache_made_by_cachewise(sampler: Sampler, tmp_path: Path) -> None:
    core = core_with(sampler, tmp_path / "state")
    p = Prediction(0.6, 1 << 30, 10.0, 30.0, 0.125)
    ref = sampler.find("labvg/data")
    core.record(lambda h: h.record_cache("dm-0", "lvmcache-attach", p, 123.0))
    found = watch.prediction(core, ref)
    assert found is not None and found.hit_ratio == 0.6 and found.applied_at == 123.0
    assert watch.prediction(core, sampler.find("bcache0")) is None


def test_many_caches_are_all_found_and_sampled(tmp_path: Path) -> None:
    sysfs, table, status = many(tmp_path, 20)
    sampler = Sampler(DmRunner(table, status), sysfs)  # type: ignore[arg-type]
    refs = sampler.caches()
    assert len(refs) == 23 and len(sampler.sample(refs)) == 23
    assert sampler.find("vg7/data").origin == f"dm-{100 + 3 * 7 + 1}"


def test_cache_ref_aliases() -> None:
    ref = CacheRef("bcache", "bcache0", "bcache0", "sdd", "sde")
    assert {"bcache0", "/dev/bcache0", "sdd", "/dev/sdd"} <= ref.aliases()


def test_the_prometheus_textfile_has_a_sample_without_any_cache() -> None:
    """A machine without a cache still writes a sample: an alert can tell "no cache" from a file
    nobody writes any more (issue 30)."""
    assert "\ncachewise_caches 0.0\n" in prometheus_text([])
    assert "\ncachewise_caches 1.0\n" in prometheus_text([sample(1, 7, 3, 10, dirty=2)])


def test_a_status_line_that_does_not_parse_and_says_nothing_wrong_is_no_failure(tmp_path: Path) -> None:
    """Seen once in the lab's watch while lvm2 reloaded the table: a dm-cache status line that did
    not parse became a sample in state failed with no trouble; it is skipped, as before."""
    status = "labvg-data: 0 2097152 cache 8\nlabvg-wc: " + WC_LINE + "\n"
    s = Sampler(DmRunner(TABLE, status), make_sys(tmp_path), clock=lambda: 1000.0)  # type: ignore[arg-type]
    refs = [r for r in s.caches() if r.name == "labvg/data"]
    assert s.sample(refs) == []


def test_a_cache_reloaded_as_another_target_has_no_sample_even_with_its_parts_gone(tmp_path: Path) -> None:
    """Seen in the lab's watch: after an uncache the LV's table is "linear" and the pool's devices
    are gone; the watch kept sampling it and wrote a 'failed' sample with that line. A table of
    another target is no cache: no sample, no failure."""
    status = "labvg-data: 0 1048576 linear\nlabvg-wc: " + WC_LINE + "\n"
    sys_root = make_sys(tmp_path)
    s = Sampler(DmRunner(TABLE, status), sys_root, clock=lambda: 1000.0)  # type: ignore[arg-type]
    refs = [r for r in s.caches() if r.name == "labvg/data"]
    assert refs and refs[0].parts
    for part in refs[0].parts:
        (sys_root / "class" / "block" / part).unlink()  # the pool's devices, removed by the uncache
    assert s.sample(refs) == []
    # the same with the kernel's Fail: still a cache, and a failed one
    failed = Sampler(DmRunner(TABLE, "labvg-data: 0 1048576 cache Fail\n"), sys_root, clock=lambda: 1000.0)  # type: ignore[arg-type]
    (sample,) = failed.sample(refs)
    assert sample.state == "failed"
    # the error target in its place, every part there or not: failed, and said so
    errored = Sampler(DmRunner(TABLE, "labvg-data: 0 1048576 error\n"), sys_root, clock=lambda: 1000.0)  # type: ignore[arg-type]
    (sample,) = errored.sample(refs)
    assert sample.state == "failed" and "error target" in (sample.trouble or "")
