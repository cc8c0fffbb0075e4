"""The command line and the terminal UI give the same recommendation for the same inputs: both
call the one application core (cachewise/core/). Driven on the same lab snapshot, with the
same trace, and with a declared workload; without either, both ask for one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static

from advisor.disks.collect import RawSystem
from cachewise.cli import main
from cachewise.core import Core
from screens.analysis import AnalysisScreen
from screens.app import CachewiseApp
from screens.recommend import RecommendScreen
from tests.conftest import FIXTURES, LAB_SCAN
from tests.tui.test_probe_screen import recommend_for

RAW = LAB_SCAN / "raw-udev.json"
TRACE = FIXTURES / "traces" / "fio-v3.iolog"


def cli_recommendation(state: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    assert main(["--state-dir", str(state), "recommend", "--from-raw", str(RAW), "--slow", "sda", "--fast", "nvme0n1",
                 "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


async def tui_recommendation(state: Path, workload: str | None) -> dict[str, object]:
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(RAW), state), watch_hotplug=False)
    async with app.run_test(size=(170, 60)) as pilot:
        await app.workers.wait_for_complete()
        if workload is None:  # open the trace, as a user would with t
            await pilot.press("t")
            await pilot.pause()
            app.screen.query_one("#trace-path", Input).value = str(TRACE)
            await pilot.press("enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert isinstance(app.screen, AnalysisScreen)
            await pilot.press("escape")
            await pilot.pause()
        await recommend_for(pilot, app)
        screen = app.screen
        assert isinstance(screen, RecommendScreen)
        if workload is not None:
            assert screen.recommendation is None, "no trace and no workload: the TUI asks, as the CLI refuses"
            assert "Choose the workload" in str(screen.query_one("#rec-summary", Static).content)
            screen.query_one("#workload", Select).value = workload
            await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.recommendation is not None
        return json.loads(json.dumps(screen.recommendation.to_json()))  # type: ignore[no-any-return]


async def test_same_recommendation_from_the_same_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = cli_recommendation(tmp_path, capsys, "--trace", str(TRACE))
    tui = await tui_recommendation(tmp_path, None)
    assert tui == cli
    assert cli["inputs"]["workload"] == "measured"  # type: ignore[index]


async def test_same_recommendation_for_a_declared_workload(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--state-dir", str(tmp_path), "recommend", "--from-raw", str(RAW), "--slow", "sda", "--fast",
                 "nvme0n1"]) == 1
    assert "--workload TYPE" in capsys.readouterr().err, "the CLI asks for a workload or a trace"
    cli = cli_recommendation(tmp_path, capsys, "--workload", "database")
    tui = await tui_recommendation(tmp_path, "database")
    assert tui == cli
