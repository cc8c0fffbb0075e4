"""Analysing a trace from the TUI: the open dialog, the report, and a bad path."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static

from cachewise.core import Core
from screens.analysis import AnalysisScreen
from screens.app import CachewiseApp
from screens.dialogs import OpenTrace
from screens.disks import DisksScreen
from tests.conftest import FIXTURES
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

TRACE = FIXTURES / "traces" / "fio-v3.iolog"


async def test_open_a_trace_and_see_curve_and_hot_data(tmp_path: Path) -> None:
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), state_dir=tmp_path, live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, OpenTrace)
        app.screen.query_one("#trace-path", Input).value = str(TRACE)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, AnalysisScreen)
        assert app.screen.analysis.requests == 4000
        text = str(app.screen.query_one("#analysis-report", Static).content)
        assert "Group" in text or app.screen.analysis.hot_blocks  # the report renders from the analysis
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)
    import sqlite3

    assert sqlite3.connect(tmp_path / "history.sqlite3").execute("SELECT COUNT(*) FROM analyses").fetchone()[0] == 1


async def test_a_path_that_is_not_a_file_is_refused_in_place(tmp_path: Path) -> None:
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("t")
        await pilot.pause()
        app.screen.query_one("#trace-path", Input).value = str(tmp_path / "missing")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, OpenTrace)
        assert "is not a readable file" in str(app.screen.query_one("#open-error", Static).content)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)
