"""Every screen at 80x24 and at 200x55: no widget wider than the screen, no table column cut
off, and every focusable widget reachable and visible when it has the focus."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.screen import Screen
from textual.widgets import DataTable, Static

from cachewise.core import Core, workload
from screens.analysis import AnalysisScreen
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.help import HelpScreen
from screens.recommend import RecommendScreen
from tests.tui.test_apply_screen import FakeExecutor, lab_inputs
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

SIZES = [(80, 24), (200, 55)]
TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "fio-v3.iolog"


async def assert_fits(app: App[object], pilot: object) -> None:
    screen: Screen[object] = app.screen
    width = screen.size.width
    name = type(screen).__name__
    for widget in screen.query("*"):
        if not widget.display or widget.outer_size.width == 0:
            continue
        assert widget.outer_size.width <= width, f"{name}: {widget!r} is {widget.outer_size.width} wide in {width}"
        if isinstance(widget, DataTable) and widget.columns:
            columns = sum(c.get_render_width(widget) for c in widget.columns.values())
            assert columns <= widget.content_size.width, f"{name}: {widget!r} cuts its columns ({columns} > " \
                                                         f"{widget.content_size.width})"
    for widget in [w for w in screen.query("*") if w.focusable and w.display]:
        widget.focus()
        for _ in range(40):  # the scroll that brings it into view may take a few frames
            await pilot.pause(0.02)  # type: ignore[attr-defined]
            if screen.region.contains_region(widget.region):
                break
        region = widget.region
        assert region.area > 0 and screen.region.contains_region(region), \
            f"{name}: {widget!r} has the focus at {region}, outside the {screen.size} screen"


@pytest.mark.parametrize("size", SIZES)
async def test_screens_fit(size: tuple[int, int]) -> None:
    inv = lab_inventory()
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=FakeExecutor(), live=False), watch_hotplug=False)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await assert_fits(app, pilot)
        await app.push_screen(HelpScreen(app.screen))
        await pilot.pause()
        await assert_fits(app, pilot)
        app.pop_screen()
        await pilot.pause()

        analysis, _ = workload.analyze(app.core, TRACE)
        await app.push_screen(AnalysisScreen(analysis))
        await pilot.pause()
        await assert_fits(app, pilot)
        # The curve uses the width: its size axis runs from the left label to the right edge.
        curve = str(app.screen.query_one("#analysis-curve", Static).content)
        axis = next(line for line in curve.splitlines() if line.startswith("      4.0 KiB"))
        assert size[0] - 12 <= len(axis) <= size[0], axis
        app.pop_screen()

        await app.push_screen(RecommendScreen(lab_inputs(inv), inv))
        await app.workers.wait_for_complete()
        await pilot.pause()
        await assert_fits(app, pilot)
        await app.screen.run_action("plan")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen)
        await assert_fits(app, pilot)
