"""The Recommend screen: from the Disks screen with a marked SSD and a highlighted disk; the
choice, the numbers, the curve with the chosen size marked, and the Why panel's sources."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot
from textual.widgets import Checkbox, OptionList, Select, Static

from cachewise.core import Core
from screens.app import CachewiseApp
from screens.disks import DisksScreen
from screens.recommend import RecommendScreen
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory
from tests.tui.test_probe_screen import recommend_for


def static_text(app: CachewiseApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


async def test_recommend_from_marked_ssd_and_highlighted_hdd() -> None:
    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), live=False), watch_hotplug=False)
    async with app.run_test(size=(170, 60)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen), "nothing marked: a hint, no screen"
        await recommend_for(pilot, app)
        screen = app.screen
        assert isinstance(screen, RecommendScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        # No trace was opened: the screen asks for the workload, as the CLI does, and guesses nothing.
        assert screen.recommendation is None
        assert "Choose the workload" in static_text(app, "#rec-summary")
        screen.query_one("#workload", Select).value = "mixed-files"
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        rec = screen.recommendation
        assert rec is not None and rec.inputs["slow"].endswith("wwn-0x5000c500a1b2c3d4")
        assert rec.summary in static_text(app, "#rec-summary")
        if rec.config is not None:
            assert "│" in static_text(app, "#rec-curve"), "the chosen size is marked on the curve"
        why = screen.query_one("#why", OptionList)
        assert why.option_count == len(rec.reasons) + len(rec.warnings) + len(rec.next) + len(rec.runner_ups)
        # The next steps, in the TUI's words: a model asks for a trace, an unprobed disk for a probe.
        first_step = len(rec.reasons) + len(rec.warnings)
        steps = [str(why.get_option_at_index(first_step + i).prompt) for i in range(len(rec.next))]
        assert len(steps) >= 2 and all(s.startswith("→ Next:") for s in steps)
        assert "(t on the Disks screen)" in steps[0] and "(p on the Disks screen)" in steps[1]
        first = rec.reasons[0].findings[0]
        assert first in static_text(app, "#why-source") and "Source:" in static_text(app, "#why-source")

        # Declaring a database with frequent fsync on one SSD: no cache helps (T-DB-2).
        screen.query_one("#workload", Select).value = "database-fsync"
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.recommendation is not None and screen.recommendation.verdict == "dont-cache"
        # Mirrored SSDs make bcache writeback possible on the empty disk.
        screen.query_one("#mirrored", Checkbox).value = True
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        cfg = screen.recommendation.config
        assert cfg is not None and (cfg.backend, cfg.mode) == ("bcache", "writeback")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)


def test_ticks_read_without_colour() -> None:
    from screens.recommend import Tick

    tick = Tick("SSDs mirrored", False)
    assert tick.BUTTON_INNER == " "
    tick.value = True
    assert tick.BUTTON_INNER == "✓"


async def database_advice(pilot: Pilot[None], app: CachewiseApp) -> RecommendScreen:
    """The Recommend screen for the lab's disks, with the database workload chosen and advised."""
    await app.workers.wait_for_complete()
    await recommend_for(pilot, app)
    screen = app.screen
    assert isinstance(screen, RecommendScreen)
    screen.query_one("#workload", Select).value = "database"
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
    return screen


async def test_a_writeback_alternative_on_one_ssd_needs_the_acceptance_box() -> None:
    """Writeback on one unmirrored SSD is offered as an alternative, with its trade-off; planning
    it with "Accept writeback risk" unticked is refused with the box named (issue 30), and with
    the box ticked the plan is made."""
    from screens.apply import ApplyScreen

    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), live=False), watch_hotplug=False)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await database_advice(pilot, app)
        rec = screen.recommendation
        assert rec is not None and not screen.query_one("#accept", Checkbox).value
        assert rec.config is None or rec.config.mode == "writethrough", "never writeback without the acceptance"
        writeback = [o for o in rec.runner_ups if o.config is not None and o.config.mode == "writeback"]
        assert writeback and all("acceptance of the risk" in o.tradeoff for o in writeback)
        for _ in range(len(rec.runner_ups) + 1):
            if screen.choice is writeback[0]:
                break
            await pilot.press("o")
            await pilot.pause()
        assert screen.choice is writeback[0]
        await pilot.press("a")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert any("Accept writeback risk" in m and "Nothing was changed" in m for m in said), said
        assert isinstance(app.screen, RecommendScreen) and app.focused is screen.query_one("#accept", Checkbox)
        await pilot.press("space")  # the refusal put the focus on the box it names
        await pilot.pause()
        assert screen.query_one("#accept", Checkbox).value
        await app.workers.wait_for_complete()
        await pilot.pause()
        rec = screen.recommendation
        assert rec is not None and rec.inputs["accept_writeback_risk"]
        chosen = (
            rec.config
            if rec.config is not None and rec.config.mode == "writeback"
            else next(o.config for o in rec.runner_ups if o.config is not None and o.config.mode == "writeback")
        )
        for _ in range(len(rec.runner_ups) + 1):
            if screen.chosen is not None and screen.chosen.config == chosen:
                break
            await pilot.press("o")
            await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert isinstance(app.screen, ApplyScreen), [str(n.message) for n in app._notifications]


async def test_keys_wait_while_the_recommendation_is_made_again_and_the_choice_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ticking a box makes the recommendation again in a worker. Until it shows, `a` and `o` act
    on nothing (the old advice was for other inputs: a lab run planned it under load and was
    refused) and say so; when it shows, the alternative chosen before stays chosen."""
    import threading

    from screens import recommend as module

    app = CachewiseApp(Core(FakeDiscovery(lab_inventory()), live=False), watch_hotplug=False)
    async with app.run_test(size=(120, 35)) as pilot:
        screen = await database_advice(pilot, app)
        rec = screen.recommendation
        assert rec is not None
        writeback = next(o for o in rec.runner_ups if o.config is not None and o.config.mode == "writeback")
        while screen.choice is not writeback:
            await pilot.press("o")
            await pilot.pause()
        gate = threading.Event()
        real = module.advise.recommend

        def held(inputs: object) -> object:
            gate.wait(10)
            return real(inputs)  # type: ignore[arg-type]

        monkeypatch.setattr(module.advise, "recommend", held)
        screen.query_one("#accept", Checkbox).value = True
        await pilot.pause()
        assert screen.pending and module.AGAIN in static_text(app, "#rec-summary")
        for key in ("a", "o"):
            await pilot.press(key)
            await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert said.count(module.NOT_READY) == 2, said
        assert isinstance(app.screen, RecommendScreen) and screen.choice is writeback
        gate.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not screen.pending and screen.recommendation is not rec
        assert screen.recommendation is not None and screen.recommendation.inputs["accept_writeback_risk"]
        shown = screen.chosen
        assert shown is not None and shown.config is not None and shown.config.mode == "writeback"
