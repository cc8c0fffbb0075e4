"""Issue 30, "Every screen tells the truth, in the user's own terms": one Pilot test per problem
a test can see (those of the pick lists, the palette and help, the confirmation and the flows'
file picker, save and root warning are tested with their own work), each at 80x24 and 200x55,
on the lab's saved snapshots."""

from __future__ import annotations

import importlib
import io
import math
import pkgutil
import re
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Checkbox, DataTable, Input, Select, Static

import screens
from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.units import human_size
from cachewise.core import Core
from screens.analysis import AnalysisScreen
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.disks import DisksScreen
from screens.flows.pick_cached import PickCached
from screens.flows.save_plan import SavePlan
from screens.help import HelpScreen
from screens.phrases import KEYS
from screens.probing import ProbePanel
from screens.recommend import RecommendScreen
from screens.widgets import CurveChart
from tests.conftest import FIXTURES, LAB_SCAN
from tests.tui.test_apply_screen import FakeExecutor
from tests.tui.test_disks_screen import FakeDiscovery
from tests.tui.test_probe_screen import FakeProber, select

SIZES = [(80, 24), (200, 55)]
RAW = LAB_SCAN / "raw-udev.json"  # sda a free HDD, labvg/data (dm-1) an LV, labplain (dm-0) a dm-crypt volume
# on sdc2, bcache0 a bcache with its cache (clean), nvme0n1 and sdg SSDs
LAYERS = FIXTURES / "lab-caches" / "raw-layers.json"  # labvg/data and labvg/vault cached, bcache0 without a cache
TRACE = FIXTURES / "traces" / "fio-v3.iolog"


def snapshot_app(raw: Path, state: Path) -> CachewiseApp:
    """The app on a saved snapshot, as `cachewise tui --from-raw FILE` starts it."""
    return CachewiseApp(Core.for_snapshot(RawSystem.load(raw), state), watch_hotplug=False)


def previewing_app(raw: Path, state: Path, prober: FakeProber | None = None) -> CachewiseApp:
    """The app on a snapshot's inventory as if it were this machine's (so a plan opens its
    preview, not the save step a snapshot's plan gets), with a fake executor and prober."""
    core = Core(FakeDiscovery(build_inventory(RawSystem.load(raw))), prober=prober, executor=FakeExecutor(),
                state_dir=state, live=False)
    return CachewiseApp(core, watch_hotplug=False)


def plain(renderable: object, width: int = 200) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def said(app: CachewiseApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def until(pilot: Pilot[None], done: object, what: str = "the screen") -> None:
    """Pause until ``done()`` holds, at most 6 s."""
    for _ in range(300):
        if done():  # type: ignore[operator]
            return
        await pilot.pause(0.02)
    raise AssertionError(f"{what} did not get there")


async def settle(app: CachewiseApp, pilot: Pilot[None]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def disks(app: CachewiseApp, pilot: Pilot[None]) -> DisksScreen:
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, DisksScreen) and screen.inventory is not None
    return screen


async def recommend(app: CachewiseApp, pilot: Pilot[None], slow: str, fast: tuple[str, ...],
                    workload: str = "database") -> RecommendScreen:
    """Mark the SSDs, highlight the slow device, c, and declare the workload."""
    for name in fast:
        await select(pilot, app, name)
        await pilot.press("space")
    await select(pilot, app, slow)
    await pilot.press("c")
    await until(pilot, lambda: isinstance(app.screen, RecommendScreen), "the Recommend screen")
    screen = app.screen
    assert isinstance(screen, RecommendScreen)
    await settle(app, pilot)
    if screen.base.analysis is None:
        screen.query_one("#workload", Select).value = workload
    await pilot.pause()
    await settle(app, pilot)
    assert screen.recommendation is not None
    return screen


async def choose(pilot: Pilot[None], screen: RecommendScreen, want: object) -> None:
    """Press o until the alternative ``want`` is the choice (None: the recommendation)."""
    assert screen.recommendation is not None
    for _ in range(len(screen.recommendation.runner_ups) + 2):
        if screen.choice is want:
            return
        await pilot.press("o")
        await pilot.pause()
    raise AssertionError(f"o never offered {want}")


async def remove_flow(app: CachewiseApp, pilot: Pilot[None]) -> PickCached:
    """g, Remove a cache, and (a snapshot's plan cannot be applied here) Plan the removal."""
    await pilot.press("g")
    await pilot.pause()
    await pilot.press("down", "enter")
    await pilot.pause()
    if not isinstance(app.screen, PickCached):
        await pilot.press("enter")  # the first button: go on and plan the removal
    await until(pilot, lambda: isinstance(app.screen, PickCached), "the Remove list")
    pick = app.screen
    assert isinstance(pick, PickCached)
    return pick


def rows(pick: PickCached) -> list[list[str]]:
    table = pick.query_one("#pick", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


@pytest.mark.parametrize("size", SIZES)
async def test_remove_lists_dirty_column_on_a_snapshot_is_never_reading(size: tuple[int, int], tmp_path: Path) -> None:
    """"The Remove list's Dirty column reads 'reading…' forever" (snapshot mode): a snapshot's
    caches are not here to read, and the column says so."""
    app = snapshot_app(LAYERS, tmp_path)
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        pick = await remove_flow(app, pilot)
        await settle(app, pilot)
        await pilot.pause(0.3)  # time a dirty-data worker would have taken
        found = rows(pick)
        assert {r[0] for r in found} == {"labvg/data (dm-0)", "labvg/vault (dm-4)"}, found
        assert all(r[-1] == "not in the snapshot" for r in found), found


@pytest.mark.parametrize("size", SIZES)
async def test_o_offers_only_alternatives_that_a_plans(size: tuple[int, int], tmp_path: Path) -> None:
    """"Choices that cannot be taken: `o` offers alternatives that `a` then refuses (bcache on an
    LV; every alternative on a dm-crypt volume)": every alternative o offers, a plans (to the
    preview, or on a snapshot the save step). Writeback on one SSD is accepted first: the box's
    own refusal is tested in test_recommend_screen."""
    app = snapshot_app(RAW, tmp_path)
    offered = 0
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        # an LV; the dm-crypt volume labplain; the partition it is opened on
        for slow in ("dm-1", "dm-0", "sdc2"):
            screen = await recommend(app, pilot, slow, ("nvme0n1",))
            screen.query_one("#accept", Checkbox).value = True
            await pilot.pause()
            await settle(app, pilot)
            rec = screen.recommendation
            assert rec is not None
            alternatives = [o for o in rec.runner_ups if o.config is not None]
            # bcache formats a disk or partition: not an LV, a dm device, or a partition a dm-crypt volume holds
            assert all(o.config.backend != "bcache" for o in alternatives), (slow, [o.summary for o in alternatives])
            for option in alternatives:
                await choose(pilot, screen, option)
                app.clear_notifications()
                await pilot.press("a")
                await until(pilot, lambda: isinstance(app.screen, (ApplyScreen, SavePlan)) or said(app),
                            "a plan or a refusal")
                assert isinstance(app.screen, (ApplyScreen, SavePlan)), (slow, option.summary, said(app))
                offered += 1
                await pilot.press("escape")
                await until(pilot, lambda shown=screen: app.screen is shown, "back on the Recommend screen")
            if not alternatives:
                app.clear_notifications()
                await pilot.press("o")
                await pilot.pause()
                assert "no other cache" in " ".join(said(app)) and screen.choice is None
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, DisksScreen), "the Disks screen")
            app.screen.marked.clear()  # type: ignore[attr-defined]
    assert offered >= 2, "the LV was offered lvmcache's other mode at least"


@pytest.mark.parametrize("size", SIZES)
async def test_bcache0_without_a_cache_has_its_own_wording(size: tuple[int, int], tmp_path: Path) -> None:
    """"`bcache0` with no cache gets the Remove wording ("nothing to flush or detach")": it is
    not a cache; what it is and what can be done are said in its own words, on the Disks screen,
    on u, and the Remove list does not offer it."""
    app = snapshot_app(LAYERS, tmp_path)
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        await select(pilot, app, "bcache0")
        detail = plain(app.screen.query_one("#detail", Static).content)
        assert "no cache attached" in detail and "straight to sdd" in detail, detail
        assert "flush" not in detail and "detach" not in detail.replace("detached", ""), detail
        await pilot.press("u")
        await pilot.pause()
        refusal = " ".join(said(app))
        assert "no cache to remove" in refusal and "Nothing was changed" in refusal, refusal
        assert "flush" not in refusal, refusal
        app.clear_notifications()
        pick = await remove_flow(app, pilot)
        assert pick.devices and all(d.name != "bcache0" for d in pick.devices)
        assert not any("flush or detach" in " ".join(r) for r in rows(pick))


@pytest.mark.parametrize("size", SIZES)
async def test_a_plan_from_two_ssds_keeps_both(size: tuple[int, int], tmp_path: Path) -> None:
    """"A plan made from the recommendation silently drops the second SSD": writeback on two
    SSDs that nothing mirrors is planned as a mirrored pool, and the preview names both."""
    app = previewing_app(RAW, tmp_path)
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        screen = await recommend(app, pilot, "dm-1", ("nvme0n1", "sdg"))
        rec = screen.recommendation
        assert rec is not None and len(rec.inputs["fast"]) == 2
        mirrored = next(o for o in rec.runner_ups if o.config is not None and o.config.mirrored_pool)
        await choose(pilot, screen, mirrored)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ApplyScreen), "the plan's preview")
        preview = app.screen
        assert isinstance(preview, ApplyScreen)
        paths = {d.path for d in preview.plan.devices}
        assert {"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001", "/dev/disk/by-id/ata-LabSSD_SSD0001"} <= paths
        text = plain(preview.query_one("#plan-preview", Static).content)
        assert "ata-LabSSD_SSD0001" in text and "nvme-QEMU_NVMe_Ctrl_NVME0001" in text
        assert "raid1" in text, "mirrored on the two SSDs"
        # A cache on one of the two SSDs (writethrough: nothing to mirror) says the other is not used.
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back on the Recommend screen")
        single = next(o for o in rec.runner_ups if o.config is not None and not o.config.mirrored_pool)
        await choose(pilot, screen, single)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ApplyScreen), "the plan's preview")
        preview = app.screen
        assert isinstance(preview, ApplyScreen) and len(preview.plan.devices) == 2  # the LV and one SSD
        text = plain(preview.query_one("#plan-preview", Static).content)
        assert "Note: /dev/disk/by-id/ata-LabSSD_SSD0001 is not used" in text, text


def value_at(sizes: list[int], hits: list[float], at: int) -> float:
    """The curve's hit ratio at ``at``, between its two nearest points (on the chart's log scale)."""
    for (s0, h0), (s1, h1) in zip(zip(sizes, hits, strict=True), zip(sizes[1:], hits[1:], strict=True), strict=False):
        if s0 <= at <= s1:
            return h0 if s1 == s0 else h0 + (h1 - h0) * (math.log(at) - math.log(s0)) / (math.log(s1) - math.log(s0))
    return hits[0] if at < sizes[0] else hits[-1]


@pytest.mark.parametrize("size", SIZES)
async def test_recommend_chart_matches_the_text(size: tuple[int, int], tmp_path: Path) -> None:
    """"The chart says 'LRU hit ratio' and peaks near 30% while the text says 64% (a different,
    unlabelled curve) ... charts have no legend": the value at the marked size on the drawn curve
    is the predicted hit ratio the text states, and the chart says which curve it is."""
    app = snapshot_app(RAW, tmp_path)
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        await pilot.press("t")
        await pilot.pause()
        app.screen.query_one("#trace-path", Input).value = str(TRACE)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, AnalysisScreen), "the Analysis screen")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, DisksScreen), "the Disks screen")
        screen = await recommend(app, pilot, "sda", ("nvme0n1",))
        rec = screen.recommendation
        assert rec is not None and rec.inputs["workload"] == "measured"
        cfg = rec.config or next(o.config for o in rec.runner_ups if o.config is not None)
        if rec.config is None:
            await choose(pilot, screen, next(o for o in rec.runner_ups if o.config is cfg))
        assert cfg is not None and cfg.predicted_hit_ratio is not None
        stated = f"{cfg.predicted_hit_ratio:.0%}"
        config_text = plain(screen.query_one("#rec-config", Static).content)
        assert re.search(rf"Predicted hit ratio +{stated}", config_text), config_text
        chart = screen.query_one("#rec-curve", CurveChart)
        curve = chart.curve
        assert curve is not None and curve.mark is not None
        at_mark = value_at(curve.sizes, curve.hits, curve.mark * curve.block_size)
        assert at_mark == pytest.approx(cfg.predicted_hit_ratio, abs=0.01), (at_mark, stated)
        # The drawn chart: the marked column, and the curve's height beside it, within a row.
        drawn = plain(chart.render(), width=size[0]).splitlines()
        grid = [line[6:] for line in drawn[: chart.plot_height]]
        assert "│" in grid[0], drawn
        column = grid[0].index("│")
        heights = [len(grid) - 1 - i for i, line in enumerate(grid)
                   for x in range(max(0, column - 1), column + 2) if x < len(line) and line[x] == "█"]
        assert heights, "the curve passes the mark"
        step = 1 / (len(grid) - 1)
        assert any(abs(h * step - cfg.predicted_hit_ratio) <= 1.5 * step for h in heights), (heights, stated)
        under = drawn[chart.plot_height + 1:]  # the axis's sizes, then the mark's size, then the legend
        assert "↑" in under[0] and human_size(cfg.size_bytes) in under[0], under
        legend = " ".join(line.strip() for line in under[1:] if line.strip())
        assert curve.legend == "read hit ratio of a full cache, 4 KiB blocks, bcache replayed where it settled", (
            "the curve the prediction is read from"
        )
        assert curve.legend in legend, (curve.legend, legend)


@pytest.mark.parametrize("size", SIZES)
async def test_flash_latency_shows_in_microseconds(size: tuple[int, int], tmp_path: Path) -> None:
    """"Latencies of flash show as '0.00 ms'": a probed SSD's median latency is in µs, on the
    Disks screen's detail pane and in the probe's result."""
    app = previewing_app(RAW, tmp_path, prober=FakeProber())  # a snapshot's disks are never probed
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        await select(pilot, app, "nvme0n1")
        await pilot.press("p")
        await settle(app, pilot)
        panel = app.screen.query_one(ProbePanel)
        await until(pilot, lambda: "µs" in str(panel.lines.get("nvme0n1", "")), "the probe's result")
        await select(pilot, app, "sda")
        await select(pilot, app, "nvme0n1")
        detail = plain(app.screen.query_one("#detail", Static).content)
        line = str(panel.lines["nvme0n1"])
        for shown in (detail, line):
            assert "126 µs" in shown and "0.00 ms" not in shown and "0.13 ms" not in shown, shown


@pytest.mark.parametrize("size", SIZES)
async def test_plan_preview_words_time_and_space_for_people(size: tuple[int, int], tmp_path: Path) -> None:
    """""Expected time … longer while dirty blocks flush" on an attach; raw key names ("cache
    bytes / ssd bytes used")": an attach's preview says no flush, an uncache's does, and the
    Space lines are words."""
    app = previewing_app(RAW, tmp_path)
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        screen = await recommend(app, pilot, "dm-1", ("nvme0n1",))
        writethrough = next(o for o in screen.recommendation.runner_ups  # type: ignore[union-attr]
                            if o.config is not None and o.config.mode == "writethrough")
        await choose(pilot, screen, writethrough)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ApplyScreen), "the plan's preview")
        preview = app.screen
        assert isinstance(preview, ApplyScreen) and preview.plan.kind == "lvmcache-attach"
        text = plain(preview.query_one("#plan-preview", Static).content)
        assert "Expected time" in text and "flush" not in text.split("Expected time")[1].splitlines()[0], text
        space = text.split("Space")[1].split("Expected time")[0]
        assert "taken on the SSD in all" in space and "cache:" in space, space
        assert not re.search(r"bytes used|cache bytes|ssd bytes|_bytes", space), space
    app = previewing_app(LAYERS, tmp_path)
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        await select(pilot, app, "dm-0")  # labvg/data, an lvmcache
        await pilot.press("u")
        await until(pilot, lambda: isinstance(app.screen, ApplyScreen), "the removal's preview")
        preview = app.screen
        assert isinstance(preview, ApplyScreen) and preview.plan.kind == "lvmcache-uncache"
        text = plain(preview.query_one("#plan-preview", Static).content)
        assert "(longer while dirty blocks flush)" in text, text


@pytest.mark.parametrize("size", SIZES)
async def test_bcache_dirty_data_zero_is_none_not_0_0k(size: tuple[int, int], tmp_path: Path) -> None:
    """"`0.0k` dirty": bcache's dirty_data of nothing (the kernel's '0.0k') is said as none."""
    app = snapshot_app(RAW, tmp_path)
    async with app.run_test(size=size) as pilot:
        inv = (await disks(app, pilot)).inventory
        assert inv is not None
        bcache0 = inv.by_name("bcache0")
        assert bcache0 is not None and bcache0.bcache is not None and bcache0.bcache.dirty_data == "0.0k"
        for name in ("bcache0", "sdd"):  # the bcache device and its backing device
            await select(pilot, app, name)
            detail = plain(app.screen.query_one("#detail", Static).content)
            assert "dirty none" in detail and "0.0k" not in detail, detail


@pytest.mark.parametrize("size", SIZES)
async def test_no_doubled_percent_sign_in_the_tuis_help(size: tuple[int, int], tmp_path: Path) -> None:
    """"`%%` in help and man": the help of the Disks and Recommend screens (? or F1) shows one %,
    never two (the command line's help and man page: tests/unit/test_manpage_completion.py)."""
    app = snapshot_app(RAW, tmp_path)
    async with app.run_test(size=size) as pilot:
        await disks(app, pilot)
        texts = []
        for opened in ("disks", "recommend"):
            if opened == "recommend":
                await recommend(app, pilot, "sda", ("nvme0n1",))
            await pilot.press("f1")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
            help_text = plain(app.screen.query_one("#help-text", Static).content)
            keys = plain(app.screen.query_one("#help-keys", Static).content)
            assert help_text.strip() and keys.strip()
            texts.append(help_text + keys)
            await pilot.press("escape")
            await pilot.pause()
        assert not [t for t in texts if "%%" in t], texts
    # and every screen's help and every key's description, as the help and the palette show them
    for info in pkgutil.walk_packages(screens.__path__, "screens."):
        module = importlib.import_module(info.name)
        texts += [c.HELP for c in vars(module).values() if isinstance(c, type) and isinstance(getattr(c, "HELP", None), str)]
    texts += list(KEYS.values())
    assert len(texts) > 20 and not [t for t in texts if "%%" in t]
