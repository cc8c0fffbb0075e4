"""The start screen: what cachewise can do, as three guided flows and the Disks screen."""

from __future__ import annotations

import asyncio
from typing import Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from cachewise.core import Core, discover, is_root
from screens.base import CoreScreen
from screens.flows.model import START_CHOICES, Flow, FlowKind
from screens.phrases import word


def cannot_apply(core: Core) -> Literal["snapshot", "root"] | None:
    """Why a plan made now could not be applied from here: a saved snapshot of another machine, or
    this machine without root (a core that is not this machine's applies through its own executor)."""
    if core.replay:
        return "snapshot"
    return "root" if core.live and not is_root() else None


class CannotApply(ModalScreen[FlowKind | None]):
    """Said at the start of Add or Remove when the plan cannot be applied from here: planning works,
    applying needs root (or that machine); go on as Plan only, go on and save the plan, or go back."""

    BINDINGS = [Binding("escape", "back", "Back"), Binding("f1", "app.help", "Help")]
    HELP = (
        "cachewise plans as any user and on a saved snapshot, but applying a plan changes disks: it needs root "
        "on the machine the plan is for. Plan only asks the same questions and saves the plan to a file, to apply "
        "later with `sudo cachewise apply FILE`. Going on, the plan's preview can be saved the same way. Esc "
        "goes back to the start screen."
    )
    DEFAULT_CSS = """
    CannotApply { align: center middle; }
    CannotApply #cannot-apply {
        width: 90%; max-width: 90; height: auto; border: thick $warning; background: $surface; padding: 0 1;
    }
    CannotApply #cannot-apply-buttons { height: auto; }
    CannotApply Button { margin-right: 1; }
    """

    def __init__(self, kind: FlowKind, why: Literal["snapshot", "root"]) -> None:
        super().__init__()
        self.kind = kind
        self.why = why

    def message(self) -> str:
        what = "removing a cache" if self.kind == "remove" else "making a cache"
        if self.why == "snapshot":
            return (
                f"This is a saved snapshot of another machine: a plan made here cannot be applied here. Planning "
                f"works: {what} ends in the plan's preview, which you save and apply on that machine (sudo "
                "cachewise apply FILE)."
            )
        return (
            f"You are not root. Planning works as any user, but applying the plan ({what}) changes disks and "
            "needs root: start cachewise with sudo (sudo cachewise) to apply it here, or save the plan and apply "
            "it later with sudo cachewise apply FILE."
        )

    def compose(self) -> ComposeResult:
        with Vertical(id="cannot-apply"):
            yield Static(Text(self.message()), id="cannot-apply-text")
            with Horizontal(id="cannot-apply-buttons"):
                if self.kind == "add":
                    yield Button("Plan only", id="plan", variant="primary")
                    yield Button("Go on with Add", id="go")
                else:
                    yield Button("Plan the removal", id="go", variant="primary")
                yield Button("Back", id="back")

    def on_mount(self) -> None:
        self.query_one(Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss({"plan": "plan", "go": self.kind}.get(event.button.id or ""))

    def action_back(self) -> None:
        self.dismiss(None)


class StartScreen(CoreScreen):
    """What cachewise can do, as three guided flows and the Disks screen."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Disks"), Binding("q", "app.quit", "Quit")]
    HELP = (
        "Start here. Add an SSD cache leads from choosing the disks to a warm cache, one step at a time; "
        "Remove a cache flushes and detaches one; Plan only saves a plan without changing anything (no root "
        "needed). Browse the disks (or Esc) shows every device. Every step has Esc for Back and ? for help; "
        "nothing changes a disk before you type its name to confirm."
    )

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="start"):
            yield Static(
                Text.assemble(("What would you like to do?", "bold"), "  (↑↓ to choose, Enter to start, q to quit)"),
                id="start-title",
            )
            yield OptionList(*(Option(label, id=key) for key, label, _ in START_CHOICES), id="start-choices")
            yield Static("", id="start-about")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#start-choices", OptionList).highlighted = 0

    @on(OptionList.OptionHighlighted, "#start-choices")
    def _about(self, event: OptionList.OptionHighlighted) -> None:
        about = next(text for key, _, text in START_CHOICES if key == event.option.id)
        self.query_one("#start-about", Static).update(Text(about))

    @on(OptionList.OptionSelected, "#start-choices")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id == "disks":
            self.app.pop_screen()
        elif event.option.id in ("add", "remove", "plan"):
            self.begin(event.option.id)

    @work(group="flow", exclusive=True, description="Discovery for the flow", exit_on_error=False)
    async def begin(self, kind: FlowKind) -> None:
        """Start a flow on a fresh scan (the disks may have changed since the Disks screen's). Add and
        Remove say first when what they plan cannot be applied from here, and offer to plan only."""
        where = cannot_apply(self.core)
        if kind in ("add", "remove") and where is not None:
            answer = await self.app.push_screen_wait(CannotApply(kind, where))
            if answer is None:
                return
            kind = answer
        inv = await asyncio.to_thread(discover.scan, self.core)
        earlier, warning = await asyncio.to_thread(discover.earlier_probes, self.core, inv)
        if warning is not None:
            self.notify(word(warning), severity="warning")
        flow = Flow(kind, inv, {**earlier, **self.services.probes})
        self.nav.step(flow, flow.steps[0])
