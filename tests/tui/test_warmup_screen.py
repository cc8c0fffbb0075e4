"""The Warm-up screen, headless: the real core and tracker over a sampler that hands out scripted
samples when the test feeds them (rising hits, a growing fill, dirty data flushed to zero, a
stall, then the cache gone), and the ways to open it (Disks `w`, after an apply, `tui --watch`)."""

from __future__ import annotations

import io
import queue
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static
from textual.worker import get_current_worker

from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.history import DB_NAME, History
from advisor.runner import CommandRunner
from advisor.units import GiB, MiB
from advisor.watch.figures import Prediction
from advisor.watch.sampler import CacheRef, Io, Sample, Sampler
from cachewise.cli import build_parser
from cachewise.core import Core
from recipes.lvmcache import CacheSpec, lvmcache_attach
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.disks import DisksScreen
from screens.warmup import Chart, WarmupScreen
from tests.conftest import FIXTURES
from tests.tui import screenshots
from tests.tui.test_apply_screen import FakeExecutor
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

LV = CacheRef("dm-cache", "labvg/data", "dm-1", "sdb", "nvme0n1", dm_name="labvg-data")
BCACHE = CacheRef("bcache", "bcache0", "bcache0", "sdd", "sde", bcache_dir="/sys/block/sdd/bcache")
T0 = time.time() - 600


class ScriptedSampler(Sampler):
    """Finds the given caches; each sample() returns the next batch the test feeds (an empty
    batch: the cache is gone), and nothing once the sampling worker is cancelled."""

    def __init__(self, *refs: CacheRef) -> None:
        super().__init__(CommandRunner())
        self.refs = list(refs)
        self.feed: queue.Queue[list[Sample]] = queue.Queue()

    def caches(self) -> list[CacheRef]:
        return self.refs

    def sample(self, refs: list[CacheRef]) -> list[Sample]:
        worker = get_current_worker()
        while not worker.is_cancelled:
            try:
                return self.feed.get(timeout=0.02)
            except queue.Empty:
                continue
        return []


def sample(dt: float, used_mib: int, hits: int, misses: int, dirty_mib: int = 0, writes: int = 0) -> Sample:
    return Sample(T0 + dt, "labvg/data", "dm-cache", "writeback", "dirty" if dirty_mib else "ok", "smq", GiB,
                  used_mib * MiB, dirty_mib * MiB, hits, misses, read_hits=hits, read_misses=misses,
                  device_io=Io(hits + misses, 0, writes, 0), origin_io=Io(misses, 0, 0, 0),
                  cache_io=Io(hits, 0, writes, 0))


def core_with(sampler: Sampler, state_dir: Path | None = None) -> Core:
    return Core(FakeDiscovery(lab_inventory()), state_dir=state_dir, live=False, _sampler=sampler)


def shown(app: CachewiseApp) -> str:
    """The screen's text: the numbers, the note, the stall panel and every chart."""
    console = Console(width=200, record=True, file=io.StringIO())
    screen = app.screen
    for selector in ("#glance", "#warmup-note", "#stall-text"):
        widget = screen.query_one(selector, Static)
        if widget.display and widget.parent is not None and widget.parent.display:
            console.print(widget.content)
    for chart in screen.query(Chart):
        console.print(chart.border_title)
        console.print(chart.render())
    return console.export_text()


async def feed(pilot: Pilot[None], sampler: ScriptedSampler, *samples: Sample) -> str:
    """Hand the sampler one batch and wait until the screen showed it; the screen's text."""
    screen = pilot.app.screen
    assert isinstance(screen, WarmupScreen)
    before = len(screen.figures)
    sampler.feed.put(list(samples))
    for _ in range(300):
        await pilot.pause(0.01)
        if len(screen.figures) > before or screen.gone:
            return shown(pilot.app)  # type: ignore[arg-type]
    raise AssertionError("the screen did not show the sample")


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_warmup_screen_follows_fill_hits_flush_stall_and_loss(size: tuple[int, int], tmp_path: Path) -> None:
    with History(tmp_path / DB_NAME) as hist:
        hist.record_cache("labvg/data", "lvmcache-attach",
                          Prediction(hit_ratio=0.85, hot_bytes=800 * MiB, seconds_63=60, seconds_95=300), T0)
        hist.record_samples([sample(0, 0, 0, 100), sample(1, 100, 10, 190)])  # the past, from an earlier run
    sampler = ScriptedSampler(LV)
    app = CachewiseApp(core_with(sampler, tmp_path), watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        await app.push_screen(WarmupScreen(LV, interval=0.01))
        screen = app.screen
        assert isinstance(screen, WarmupScreen)
        for _ in range(300):  # the recorded past arrives first
            await pilot.pause(0.01)
            if len(screen.figures) == 2:
                break
        assert len(screen.figures) == 2 and "9.8%" in shown(app)  # 100 MiB of 1 GiB

        text = await feed(pilot, sampler, sample(2, 200, 40, 200))
        assert "19.5%" in text and "75.0%" in text  # fill; 30 hits of 40 lookups this interval
        assert "predicted of reads 85.0%" in text
        text = await feed(pilot, sampler, sample(3, 400, 130, 210))
        assert "39.1%" in text and "90.0%" in text and "min 0.0% max 39.1%" in text  # the chart keeps the past

        text = await feed(pilot, sampler, sample(4, 512, 220, 220, dirty_mib=300, writes=10))
        assert "300.0 MiB" in text
        # The flush rate is taken over the tracker's 10 s window, so the next reading comes 11 s later.
        text = await feed(pilot, sampler, sample(15, 512, 310, 230, dirty_mib=200, writes=10))
        assert "200.0 MiB, flushing 9.1 MiB/s, about 22 s left" in text
        text = await feed(pilot, sampler, sample(16, 512, 400, 240, dirty_mib=0, writes=10))
        assert "none (clean)" in text and "Flush stalled" not in text
        assert not screen.query_one("#stall").display

        await feed(pilot, sampler, sample(17, 512, 490, 250, dirty_mib=100, writes=20))
        text = await feed(pilot, sampler, sample(57, 512, 580, 260, dirty_mib=100, writes=400))
        assert screen.query_one("#stall").display
        assert "no progress for 40 s" in text and "keeps writing" in text and "migration_threshold" in text
        app.save_screenshot(filename=f"warmup-{size[0]}x{size[1]}.svg", path=str(tmp_path))
        if size == (200, 55):
            screenshots.save(app, "warmup")

        text = await feed(pilot, sampler)
        assert "labvg/data is no longer a cache" in text
        await app.workers.wait_for_complete()
        await pilot.press("escape")
        assert isinstance(app.screen, DisksScreen)
    with History(tmp_path / DB_NAME) as hist:
        assert len(hist.samples("labvg/data")) == 2 + 7, "every sample shown was recorded"


async def test_w_on_disks_opens_the_warmup_screen_of_a_cache_and_refuses_other_devices() -> None:
    sampler = ScriptedSampler(LV, BCACHE)
    app = CachewiseApp(core_with(sampler), watch_hotplug=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.screen.query_one("#devices", DataTable)
        table.move_cursor(row=table.get_row_index("nvme0n1"))
        await pilot.press("w")
        await app.workers.wait_for_complete()
        assert isinstance(app.screen, DisksScreen)
        assert any("/dev/nvme0n1 is not a cache on this machine" in str(n.message) for n in app._notifications)
        table.move_cursor(row=table.get_row_index("bcache0"))
        await pilot.press("w")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, WarmupScreen) and app.screen.ref == BCACHE


async def test_after_applying_a_cache_plan_w_opens_its_warmup_screen() -> None:
    inv = lab_inventory()
    plan = lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    core = Core(FakeDiscovery(inv), executor=FakeExecutor(), live=False, _sampler=ScriptedSampler(LV))
    app = CachewiseApp(core, watch_hotplug=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = ApplyScreen(plan)
        await app.push_screen(screen)
        await pilot.press("w")
        assert app.screen is screen and not screen.made_cache, "nothing to watch before the plan ran"
        screen.query_one("#confirm-name", Input).value = screen.target
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.made_cache and "Press w to watch it warm up" in str(screen.query_one("#apply-status", Static).content)
        await pilot.press("w")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, WarmupScreen) and app.screen.ref == LV


async def test_tui_watch_opens_on_the_warmup_screen_and_leaving_records_what_is_pending(tmp_path: Path) -> None:
    assert build_parser().parse_args(["tui", "--watch", "labvg/data"]).watch == "labvg/data"
    sampler = ScriptedSampler(LV)
    app = CachewiseApp(core_with(sampler, tmp_path), watch_hotplug=False, watch=LV)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, WarmupScreen) and "labvg/data" in shown(app)
        await feed(pilot, sampler, sample(0, 0, 0, 100))  # recorded at once: the first batch
        await feed(pilot, sampler, sample(1, 100, 10, 190))  # pending until the next batch, or leaving
        await pilot.press("escape")
        assert isinstance(app.screen, DisksScreen)
        for _ in range(300):
            with History(tmp_path / DB_NAME) as hist:
                if len(hist.samples("labvg/data")) == 2:
                    break
            await pilot.pause(0.01)
        else:
            raise AssertionError("leaving the screen did not record the pending sample")


class FixedSampler(Sampler):
    """Finds the given cache; every sample() is the same reading, at once."""

    def __init__(self, ref: CacheRef, reading: Sample) -> None:
        super().__init__(CommandRunner())
        self.ref, self.reading = ref, reading

    def caches(self) -> list[CacheRef]:
        return [self.ref]

    def sample(self, refs: list[CacheRef]) -> list[Sample]:
        return [replace(self.reading, t=time.time())]


async def test_k_rechecks_the_cache_and_a_previews_the_resize_plan(tmp_path: Path) -> None:
    vault = CacheRef("dm-cache", "labvg/vault", "dm-4", "dm-7", "dm-5", dm_name="labvg-vault")

    def reading(dt: float, hits: int, misses: int) -> Sample:
        return Sample(T0 + dt, "labvg/vault", "dm-cache", "writethrough", "ok", "smq", 16 * MiB, 16 * MiB, 0,
                      hits, misses, read_hits=hits, read_misses=misses)

    with History(tmp_path / DB_NAME) as hist:  # made an hour ago, predicted 80% with 48 MiB of hot data
        hist.record_cache("labvg/vault", "lvmcache-attach", Prediction(0.8, 48 * MiB, 60, 120), T0 - 3600)
        hist.record_samples([reading(0, 0, 0), reading(60, 300, 700)])
    inv = build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json"))
    core = Core(FakeDiscovery(inv), state_dir=tmp_path, live=False, _sampler=FixedSampler(vault, reading(0, 3000, 7000)))
    app = CachewiseApp(core, watch_hotplug=False)
    async with app.run_test(size=(120, 45)) as pilot:
        await app.push_screen(WarmupScreen(vault, interval=60))
        screen = app.screen
        assert isinstance(screen, WarmupScreen)
        await pilot.press("a")
        assert screen.rechecked is None
        await pilot.press("k")
        for _ in range(500):
            await pilot.pause(0.01)
            if screen.rechecked is not None:
                break
        assert screen.rechecked is not None
        text = str(screen.query_one("#recheck-text", Static).content)
        assert "Grow it to 56.0 MiB" in text and "30% were served by the cache" in text and "L-SIZE-4" in text
        assert "a previews the plan: Resize the cache of labvg/vault from 16.0 MiB to 56.0 MiB" in text
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen) and app.screen.plan.kind == "lvmcache-resize"
