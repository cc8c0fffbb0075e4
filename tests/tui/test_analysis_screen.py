"""Analysing a trace from the TUI: the open dialog, the report, and a bad path."""

from __future__ import annotations

from pathlib import Path

import pytest
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


async def test_a_long_trace_shows_its_progress_on_the_status_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace analysed in chunks (here "long" from 1,000 requests) tells the status line how far
    it is, each reading; the usual line (the devices, the keys) is back when the analysis opens."""
    from advisor.workload.traces import load_trace, write_trace
    from cachewise.core import workload

    path = tmp_path / "long.cwtrace"
    write_trace(path, load_trace(TRACE).requests, {"device": "/dev/sdb"})
    monkeypatch.setattr("advisor.workload.analysis.STREAM_REQUESTS", 1000)
    seen: list[str] = []
    real = workload.analyze

    def watched(core: Core, request: object, progress: object = None) -> object:
        def told(what: str, share: float) -> None:
            progress(what, share)  # type: ignore[operator]
            seen.append(str(app.screen.query_one("#status", Static).content))

        return real(core, request, told)  # type: ignore[arg-type]

    monkeypatch.setattr(workload, "analyze", watched)
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), state_dir=tmp_path, live=False), watch_hotplug=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        usual = str(app.screen.query_one("#status", Static).content)
        assert "devices" in usual
        await pilot.press("t")
        await pilot.pause()
        app.screen.query_one("#trace-path", Input).value = str(path)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, AnalysisScreen) and app.screen.analysis.requests == 4000
        assert seen and seen[-1] == f"Analysing {path}: sampling the curve, 100%"
        assert all(line.startswith(f"Analysing {path}: sampling the curve, ") for line in seen)
        await pilot.press("escape")
        await pilot.pause()
        assert str(app.screen.query_one("#status", Static).content) == usual
