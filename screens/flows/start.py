"""The start screen: what cachewise can do, as three guided flows and the Disks screen."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from cachewise.core import discover
from screens.base import CoreScreen
from screens.flows.model import START_CHOICES, Flow, FlowKind
from screens.phrases import word


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
        """Start a flow on a fresh scan (the disks may have changed since the Disks screen's)."""
        inv = await asyncio.to_thread(discover.scan, self.core)
        earlier, warning = await asyncio.to_thread(discover.earlier_probes, self.core, inv)
        if warning is not None:
            self.notify(word(warning), severity="warning")
        flow = Flow(kind, inv, {**earlier, **self.services.probes})
        self.nav.step(flow, flow.steps[0])
