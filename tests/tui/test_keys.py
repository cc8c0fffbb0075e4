"""Keys mean one thing everywhere: every binding of every screen is walked; a key with two
meanings, a binding whose action nothing handles, a footer key the screen does not answer,
q anywhere but the top, or a screen without Esc and without help fails."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections import defaultdict

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

import screens
from cachewise.core import Core
from screens.app import CachewiseApp
from screens.apply import ApplyScreen
from screens.disks import DisksScreen
from screens.flows.start import StartScreen
from screens.help import HelpScreen
from screens.recommend import RecommendScreen
from tests.tui.test_apply_screen import FakeExecutor, lab_inputs
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory

CLOSE = "escape"  # closes the screen on top: Back, Cancel or Later, by what the screen is


def screen_classes() -> list[type[Screen[object]]]:
    found: dict[str, type[Screen[object]]] = {}
    for info in pkgutil.walk_packages(screens.__path__, "screens."):  # the flows' steps too
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Screen) and cls.__module__ == module.__name__:
                found[cls.__qualname__] = cls
    # A base the others build on (CoreScreen) is never shown itself.
    return [c for c in found.values() if not any(o is not c and issubclass(o, c) for o in found.values())]


def bindings(cls: type[object]) -> list[Binding]:
    out = []
    for b in cls.__dict__.get("BINDINGS", []):  # the class's own; Textual's defaults (tab, ctrl+c) aside
        binding = b if isinstance(b, Binding) else Binding(*b)
        out += [Binding(key.strip(), binding.action, binding.description, binding.show) for key in binding.key.split(",")]
    return out


def handler(cls: type[object], action: str) -> object:
    namespace, _, name = action.rpartition(".")
    name = re.sub(r"\(.*\)$", "", name)
    owner = CachewiseApp if namespace == "app" else cls
    return getattr(owner, f"action_{name}", None)


def test_every_key_has_one_meaning_and_every_binding_a_handler() -> None:
    classes = screen_classes()
    assert {c.__name__ for c in classes} >= {"DisksScreen", "RecommendScreen", "ApplyScreen", "WarmupScreen",
                                             "AnalysisScreen", "HelpScreen", "InterruptedPlan", "ConfirmProbe",
                                             "StartScreen", "PickSlow", "PickFast", "MeasureStep", "WorkloadStep",
                                             "PickCached", "SavePlan", "TraceWindow"}
    meanings: dict[str, set[str]] = defaultdict(set)
    for owner in [CachewiseApp, *classes]:
        for b in bindings(owner):
            assert handler(owner, b.action) is not None, f"{owner.__name__}: {b.key} -> {b.action} is handled nowhere"
            if b.key != CLOSE:
                meanings[b.key].add(b.description)
    doubled = {key: sorted(d) for key, d in meanings.items() if len(d) > 1}
    assert not doubled, f"keys with more than one meaning: {doubled}"


def test_q_quits_only_from_the_top_and_every_other_screen_closes_with_escape() -> None:
    assert "q" not in {b.key for b in bindings(CachewiseApp)}
    for cls in screen_classes():
        keys = {b.key for b in bindings(cls)} | {b.key for base in cls.__mro__[1:] for b in bindings(base)}
        if cls is DisksScreen:  # the bottom of the stack
            assert "q" in keys and CLOSE not in keys
        elif cls is StartScreen:  # shown over the Disks screen at start: Esc goes to the disks
            assert "q" in keys and CLOSE in keys
        else:
            assert "q" not in keys, f"q on {cls.__name__}"
            assert CLOSE in keys, f"{cls.__name__} cannot be left with Esc"
        assert getattr(cls, "HELP", None) or cls.__doc__, f"{cls.__name__} has nothing for ? to show"


async def _footer_matches_bindings(app: App[object]) -> None:
    """Every key the footer shows is one the screen answers to, with the same words."""
    screen = app.screen
    active = screen.active_bindings
    footer = screen.query_one(Footer)
    shown = [(k.key, k.description) for k in footer.query("FooterKey")]  # type: ignore[attr-defined]
    assert shown, f"{type(screen).__name__}: an empty footer"
    for key, description in shown:
        assert key in active, f"{type(screen).__name__}: the footer shows {key}, which nothing handles"
        assert active[key].binding.description == description


async def test_walk_the_screens_keys_help_and_palette() -> None:
    inv = lab_inventory()
    app = CachewiseApp(Core(FakeDiscovery(inv), executor=FakeExecutor(), live=False), watch_hotplug=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await _footer_matches_bindings(app)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Rescan", "Hidden", "Mark", "Probe", "Trace", "Cache", "Warm-up", "Quit"} <= titles

        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "Space" in str(app.screen.query_one("#help-text", Static).content)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)

        await app.push_screen(RecommendScreen(lab_inputs(inv), inv))
        await app.workers.wait_for_complete()
        await pilot.pause()
        await _footer_matches_bindings(app)
        assert "Plan it" in {c.title for c in app.get_system_commands(app.screen)}
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("q")  # not the top: q does nothing here
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, RecommendScreen)

        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen)
        await _footer_matches_bindings(app)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RecommendScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen)
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running
