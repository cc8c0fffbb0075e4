"""Applying a plan in the TUI: the dry-run preview, the checks of the live system (preflight),
then the user types the target device's name, then the journaled run with each command and
the flush progress as it happens. Also the prompt shown at start when an earlier plan was
interrupted. The order (checks before the confirmation) is the core's: cachewise.core.apply.run."""

from __future__ import annotations

import threading

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.suggester import SuggestFromList
from textual.widgets import Footer, Header, Input, RichLog, Static

from advisor.apply.journal import Journal
from advisor.apply.run import ApplyError, Event
from advisor.errors import CachewiseError
from advisor.plan.model import Plan
from cachewise.core import apply
from cachewise.render import event_line, plan_preview
from recipes.registry import makes_cache
from screens.base import CoreScreen
from screens.flows.model import Flow
from screens.flows.steps import StepBar
from screens.names import label, names
from screens.phrases import word
from screens.widgets import Curve


class ApplyScreen(CoreScreen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("w", "warmup", "Warm-up"),
        Binding("f2", "save", "Save instead"),
    ]
    HELP = (
        "The plan, before anything runs: the exact commands, the layout before and after, and what will be "
        "destroyed. cachewise checks the system against the plan first; type the device's name (the one shown, "
        "its kernel name or a /dev path of it; → completes it) and press Enter to run it, or Esc to leave "
        "without changing anything. Each step is journaled: if the run is "
        "interrupted, cachewise offers to resume or roll it back at the next start. After a cache is made, "
        "w follows its warm-up."
    )

    def __init__(
        self,
        plan: Plan,
        journal: Journal | None = None,
        rollback: bool = False,
        flow: Flow | None = None,
        curve: Curve | None = None,
    ) -> None:
        super().__init__()
        self.plan = plan
        self.flow = flow  # a guided flow's step: the step bar, and on to the Warm-up screen after
        self.curve = curve  # the recommendation's curve, for the Warm-up screen
        self.journal = journal
        self.rollback = rollback
        self.verb = "roll back" if rollback else ("resume" if journal is not None else "apply")
        self.target = plan.target
        bound = next(d for d in plan.devices if d.path == plan.target)
        # The names typing confirms: the target's own, none that another device of the plan answers to.
        others = {n for d in plan.devices if d is not bound for n in names(d.path, d.devnode)}
        self.accepted = tuple(n for n in names(bound.path, bound.devnode) if n not in others)
        self.shown = label(bound.path, bound.devnode)
        self.outcome: str | None = None
        self.running = False
        self.checked: bool | None = None  # preflight: None while it runs, then passed or not
        self._confirmed = threading.Event()
        self._cancelled = False
        self.made_cache = False  # applied a plan that made a cache: offer its Warm-up screen

    def compose(self) -> ComposeResult:
        yield Header()
        if self.flow is not None:
            yield StepBar(self.flow, self.flow.steps[-2] if self.flow.kind == "add" else self.flow.steps[-1])
        with VerticalScroll(id="apply"):
            yield Static(plan_preview(self.plan), id="plan-preview")
            yield RichLog(id="apply-log", wrap=True, markup=False)
        # The confirmation stays in view at the bottom while the preview (what it destroys and
        # the commands first) and then the run's log scroll above it.
        with Vertical(id="confirm-bar"):
            # The name on a line of its own: copied or read whole, never broken by the wrap.
            stable, _, kernel = self.shown.partition(" (")
            yield Static(
                Text.assemble(
                    f"{self._so_far()} To {self.verb} this plan, type the device's name and press Enter:\n  ",
                    (stable, "bold"),
                    f" ({kernel}" if kernel else "",
                ),
                id="confirm-hint",
            )
            # An empty box until typed: a placeholder showing the name looked already filled in.
            yield Input(
                placeholder="type the device name (→ completes it)",
                id="confirm-name",
                suggester=SuggestFromList(self.accepted, case_sensitive=True),
            )
            yield Static(Text("Checking the system against the plan…", style="dim"), id="apply-status")
        yield Footer()

    def _so_far(self) -> str:
        """What has run: nothing for a new plan; the journal's steps for a resume or rollback."""
        done = self.journal.steps_run() if self.journal is not None else []
        if not done:
            return "Nothing has run yet."
        return f"Steps that already ran: {', '.join(done)}; nothing more has run since."

    def on_mount(self) -> None:
        # The preview opens at its top (the commands and what they destroy), not scrolled down
        # to the box that has the focus.
        self.query_one("#confirm-name", Input).focus(scroll_visible=False)
        self._run()

    def on_unmount(self) -> None:
        self._cancelled = True
        self._confirmed.set()

    def _status(self, text: str, style: str) -> None:
        self.query_one("#apply-status", Static).update(Text(text, style=style))

    @on(Input.Submitted, "#confirm-name")
    def _submitted(self, event: Input.Submitted) -> None:
        if self.running or self.outcome is not None or self.checked is False:
            return
        if event.value.strip() not in self.accepted:
            self._status(f"The name did not match {self.shown}; nothing was changed.", "red")
            return
        self.query_one("#confirm-name", Input).disabled = True
        self._status("Running…" if self.checked else "Confirmed; running once the checks pass…", "bold")
        self._confirmed.set()

    def _wait_for_name(self, _plan: Plan) -> bool:
        """The confirmation, asked once the checks passed: blocks this worker until the name is typed."""
        self.checked = True
        self.app.call_from_thread(self._ready)
        self._confirmed.wait()
        if not self._cancelled:
            self.running = True
        return not self._cancelled

    def _ready(self) -> None:
        if not self._confirmed.is_set():
            self._status("Checked: the system is as the plan expects; type the name above.", "green")
        else:
            self._status("Running…", "bold")

    @work(thread=True, exclusive=True, group="apply", exit_on_error=False)
    def _run(self) -> None:
        def report(e: Event) -> None:
            self.app.call_from_thread(self._log, event_line(e))

        try:
            outcome = apply.run(self.core, self.plan, self._wait_for_name, report, self.journal, self.rollback)
        except ApplyError as exc:  # it ran and stopped: where the system stands
            self.app.call_from_thread(self._finished, None, word(exc))
            return
        except CachewiseError as exc:  # refused before anything ran (not news once the screen is left)
            if not self._cancelled:
                self.checked = self.checked or False
                self.app.call_from_thread(self._finished, None, word(exc))
            return
        self.app.call_from_thread(self._finished, outcome, "")

    def _log(self, line: str) -> None:
        """A line of the run's log, kept in view: once it runs, the log is what there is to watch."""
        self.query_one("#apply-log", RichLog).write(line)
        self.query_one("#apply", VerticalScroll).scroll_end(animate=False)

    def _finished(self, outcome: str | None, error: str) -> None:
        self.running = False
        self.outcome = outcome or ("stopped" if self.checked else None)
        if outcome is None:
            self.query_one("#confirm-name", Input).disabled = True
            self._status(error, "red")
        else:
            self.made_cache = not self.rollback and makes_cache(self.plan.kind)
            # The question is answered: "Nothing has run yet" and the box would be stale now.
            self.query_one("#confirm-hint").display = False
            self.query_one("#confirm-name").display = False
            if self.flow is not None and self.flow.kind == "remove":
                after = " Esc goes back to the caches left."
            else:
                after = " Press w to watch it warm up." if self.made_cache else ""
            self._status(f"{self.plan.title}: {outcome}.{after}", "bold green")
            self.refresh_bindings()
            self.query_one("#apply", VerticalScroll).scroll_end(animate=False)
            if self.made_cache and self.flow is not None:
                self.action_warmup()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "save":  # only a plan that has not begun to run (a resume has its journal)
            return not self.running and self.outcome is None and self.journal is None
        return action != "warmup" or self.made_cache

    def action_save(self) -> None:
        """Save the plan to a file instead of running it here (to run later, or elsewhere)."""
        self.nav.save_plan(self.flow, self.plan, "instead")

    @work(group="warmup", exclusive=True, description="find the cache the plan made", exit_on_error=False)
    async def action_warmup(self) -> None:
        await self.nav.warmup(self.target, flow=self.flow, curve=self.curve)
