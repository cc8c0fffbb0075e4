"""The command palette (Ctrl+P) and the help (? or F1) list only cachewise's actions, each with
what it does (issue 30): on every screen reached from the Disks screen of a saved snapshot, the
palette's entries are described, none twice, and none of Textual's own (copy, its quit, keys,
screenshot, super+c); the help lists the same keys, each described; and every binding of every
screen has its description in the phrasebook."""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import re
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.binding import Binding
from textual.command import CommandList, CommandPalette
from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Input, OptionList, Static

import screens
from advisor.disks.collect import RawSystem
from cachewise.core import Core
from screens.app import CachewiseApp
from screens.phrases import KEYS
from tests.tui.test_fit import TRACE
from tests.tui.test_same_recommendation import RAW

# Textual's own commands and bindings, which are not cachewise's actions.
TEXTUAL = {"Copy selected text", "Keys", "Maximize", "Minimize", "Screenshot", "Focus Next", "Focus Previous", "Theme"}


def cachewise_classes() -> list[type[DOMNode]]:
    """Every screen and dialog class cachewise defines, and the app: the owners of the bindings
    the help and the palette list (a widget's own keys work while it has the focus)."""
    found: list[type[DOMNode]] = []
    for info in pkgutil.walk_packages(screens.__path__, "screens."):
        module = importlib.import_module(info.name)
        found += [
            c for _, c in inspect.getmembers(module, inspect.isclass)
            if issubclass(c, (Screen, App)) and c.__module__ == module.__name__
        ]
    return found


def test_every_binding_of_every_screen_is_described() -> None:
    bindings = [(c.__name__, b) for c in cachewise_classes() for b in c.__dict__.get("BINDINGS", [])]
    assert len(bindings) >= 20  # the Disks screen's ten, the dialogs', the steps', the app's
    for owner, b in bindings:
        assert isinstance(b, Binding), (owner, b)
        assert b.description, f"{owner}: the binding {b.key} -> {b.action} has no word for the footer"
        assert KEYS.get(b.action), f"{owner}: {b.key} -> {b.action} has no description in screens.phrases.KEYS"


def text_of(renderable: object) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def palette_entries(app: CachewiseApp, pilot: Pilot[None]) -> list[tuple[str, str]]:
    """Open the palette as a user would (Ctrl+P), read every (title, description), close it."""
    under = app.screen
    await pilot.press("ctrl+p")
    for _ in range(100):
        await pilot.pause(0.02)
        if isinstance(app.screen, CommandPalette) and app.screen.query_one(CommandList).option_count:
            break
    palette = app.screen
    assert isinstance(palette, CommandPalette)
    await pilot.pause(0.2)  # every provider's hits are in
    listed = palette.query_one(CommandList)
    entries = []
    for i in range(listed.option_count):
        title, _, about = str(listed.get_option_at_index(i).prompt).partition("\n")
        entries.append((title, about))
    await pilot.press("escape")
    await pilot.pause()
    assert app.screen is under
    return entries


async def help_rows(app: CachewiseApp, pilot: Pilot[None]) -> list[str]:
    """Open the help with F1 (? goes into a text box that has the focus), read its keys, close it."""
    under = app.screen
    await pilot.press("f1")
    await pilot.pause()
    assert app.screen is not under, f"no help on {type(under).__name__}"
    rows = [line.strip() for line in text_of(app.screen.query_one("#help-keys", Static).content).splitlines()]
    await pilot.press("escape")
    await pilot.pause()
    assert app.screen is under
    return [r for r in rows if r]


async def check_here(app: CachewiseApp, pilot: Pilot[None], seen: list[str]) -> None:
    """The palette and the help of the screen now on top."""
    name = type(app.screen).__name__
    seen.append(name)
    entries = await palette_entries(app, pilot)
    titles = [t for t, _ in entries]
    assert len(titles) == len(set(titles)), f"{name}: listed twice: {titles}"
    assert not TEXTUAL & set(titles), f"{name}: Textual's own commands: {titles}"
    assert "Quit" not in titles or ("Quit", "Leave cachewise (q)") in entries, f"{name}: Textual's Quit: {entries}"
    for title, about in entries:
        assert len(about) > 10, f"{name}: {title} has no description"
        assert "super+" not in about and "ctrl+c" not in about.lower(), f"{name}: {title}: {about}"
    # The guided flows from everywhere; of Textual's own, the display's theme alone.
    assert {"Guided: Add an SSD cache", "Guided: Remove a cache", "Display: theme"} <= set(titles), titles
    rows = await help_rows(app, pilot)
    assert rows and rows[-1].startswith("Ctrl+P"), rows
    for row in rows:
        assert ":" in row and "super+" not in row and "Copy selected text" not in row, f"{name}: {row}"
    # What the help lists, the palette offers (an action turned off for now, Warm-up before a
    # cache is made, is in the help alone).
    helped = {re.split(r"\s{2,}", row, maxsplit=1)[1].split(":")[0] for row in rows[:-1]}
    assert {t for t in titles if not t.startswith(("Guided:", "Display:"))} <= helped, (titles, rows)


async def settle(app: CachewiseApp, pilot: Pilot[None]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def until(pilot: Pilot[None], done: object) -> None:
    for _ in range(250):
        if done():  # type: ignore[operator]
            return
        await pilot.pause(0.02)
    raise AssertionError("the screen did not get there")


async def choose(app: CachewiseApp, pilot: Pilot[None], kernel_name: str) -> None:
    """Move a pick list's cursor to the device of this kernel name and press Enter."""
    step = app.screen
    table = step.query_one("#pick", DataTable)
    table.move_cursor(row=next(i for i, d in enumerate(step.devices) if d.name == kernel_name))  # type: ignore[attr-defined]
    await pilot.pause()
    await pilot.press("enter")
    await settle(app, pilot)


async def choose_workload(app: CachewiseApp, pilot: Pilot[None]) -> None:
    choices = app.screen.query_one(OptionList)
    choices.focus()
    prompts = [str(choices.get_option_at_index(i).prompt) for i in range(choices.option_count)]
    choices.highlighted = prompts.index("Type: database (random I/O)")
    await pilot.press("enter")
    await settle(app, pilot)


@pytest.mark.parametrize("size", [(80, 24), (200, 55)])
async def test_every_screen_lists_only_cachewises_described_actions(size: tuple[int, int], tmp_path: Path) -> None:
    app = CachewiseApp(Core.for_snapshot(RawSystem.load(RAW), tmp_path), watch_hotplug=False)
    seen: list[str] = []
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await check_here(app, pilot, seen)  # the Disks screen
        await pilot.press("d")  # the Doctor, then back
        await settle(app, pilot)
        await check_here(app, pilot, seen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("t")  # the trace to open, then its analysis
        await pilot.pause()
        await check_here(app, pilot, seen)
        app.screen.query_one(Input).value = str(TRACE)
        await pilot.press("enter")
        await until(pilot, lambda: type(app.screen).__name__ == "AnalysisScreen")
        await settle(app, pilot)
        await check_here(app, pilot, seen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("g")  # the start screen, then Add to its preview
        await settle(app, pilot)
        await check_here(app, pilot, seen)
        await pilot.press("enter")  # first: a plan made on a snapshot cannot be applied here
        await until(pilot, lambda: type(app.screen).__name__ == "CannotApply")
        await check_here(app, pilot, seen)
        app.screen.query_one("#go").focus()  # go on with Add
        await pilot.press("enter")
        await settle(app, pilot)
        await check_here(app, pilot, seen)  # the slow device
        await choose(app, pilot, "sda")
        await check_here(app, pilot, seen)  # the fast device
        await choose(app, pilot, "nvme0n1")
        await check_here(app, pilot, seen)  # measure
        app.screen.query_one("#measure-go").focus()
        await pilot.press("enter")
        await settle(app, pilot)
        await check_here(app, pilot, seen)  # the workload
        await choose_workload(app, pilot)
        rec = app.screen
        await check_here(app, pilot, seen)  # the recommendation
        if rec.recommendation.config is None:  # type: ignore[attr-defined]
            await pilot.press("o")
        await pilot.press("a")
        await until(pilot, lambda: type(app.screen).__name__ == "SavePlan")
        await settle(app, pilot)
        await check_here(app, pilot, seen)  # the preview, to save: a snapshot's plan is not applied here
        for _ in range(6):  # back to the start screen
            if type(app.screen).__name__ == "StartScreen":
                break
            await pilot.press("escape")
            await pilot.pause()
        await pilot.press("home", "down", "enter")  # Remove a cache, after the same notice
        await until(pilot, lambda: type(app.screen).__name__ == "CannotApply")
        app.screen.query_one("#go").focus()
        await pilot.press("enter")
        await settle(app, pilot)
        await check_here(app, pilot, seen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("home", "down", "down", "enter")  # Plan only, to its save step
        await settle(app, pilot)
        await choose(app, pilot, "sda")
        await choose(app, pilot, "nvme0n1")
        await choose_workload(app, pilot)
        rec = app.screen
        if rec.recommendation.config is None:  # type: ignore[attr-defined]
            await pilot.press("o")
        await pilot.press("a")
        await until(pilot, lambda: type(app.screen).__name__ == "SavePlan")
        await check_here(app, pilot, seen)
    assert seen == [
        "DisksScreen", "DoctorScreen", "OpenTrace", "AnalysisScreen", "StartScreen", "CannotApply", "PickSlow", "PickFast",
        "MeasureStep", "WorkloadStep", "RecommendScreen", "SavePlan", "PickCached", "SavePlan",
    ]
