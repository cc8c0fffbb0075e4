"""Applying a plan in the TUI: the dry-run preview first, then the user types the target
device's name, then the journaled run with each command and the flush progress as it happens.
Also the prompt shown at start when an earlier plan was interrupted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Header, Input, RichLog, Static

from advisor.apply.run import ApplyError, Event
from advisor.plan.model import Plan
from cachewise.render import plan_preview

# Runs the plan (or resumes or rolls it back), reporting events; returns the outcome word.
Runner = Callable[[Callable[[Event], None]], str]


class ApplyScreen(Screen[None]):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, plan: Plan, run: Runner, verb: str = "apply") -> None:
        super().__init__()
        self.plan = plan
        self.run_plan = run
        self.verb = verb
        self.target = next((d.path for d in plan.devices if d.role == "origin"), plan.devices[0].path)
        self.outcome: str | None = None
        self.running = False

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="apply"):
            yield Static(plan_preview(self.plan), id="plan-preview")
            yield Static(f"Nothing has run yet. To {self.verb} this plan, type [b]{self.target}[/] and press Enter.",
                         id="confirm-hint")
            yield Input(placeholder=self.target, id="confirm-name")
            yield Static("", id="apply-status")
            yield RichLog(id="apply-log", wrap=True, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#confirm-name", Input).focus()

    @on(Input.Submitted, "#confirm-name")
    def _confirmed(self, event: Input.Submitted) -> None:
        if self.running or self.outcome is not None:
            return
        if event.value.strip() != self.target:
            self.query_one("#apply-status", Static).update(
                Text(f"The name did not match {self.target}; nothing was changed.", style="red"))
            return
        self.running = True
        self.query_one("#confirm-name", Input).disabled = True
        self.query_one("#apply-status", Static).update(Text("Running…", style="bold"))
        self._run()

    @work(thread=True, exclusive=True, group="apply", exit_on_error=False)
    def _run(self) -> None:
        def report(e: Event) -> None:
            line = {"skip": f"= {e.step.description} (already done)", "run": f"$ {e.message}",
                    "ok": f"  ok: {e.step.description}", "progress": f"  … {e.message}",
                    "undo": f"$ {e.message}"}.get(e.kind, e.message)
            self.app.call_from_thread(self.query_one("#apply-log", RichLog).write, line)

        try:
            outcome = self.run_plan(report)
        except ApplyError as exc:
            self.app.call_from_thread(self._finished, None, str(exc))
            return
        self.app.call_from_thread(self._finished, outcome, "")

    def _finished(self, outcome: str | None, error: str) -> None:
        self.running = False
        self.outcome = outcome or "stopped"
        status = self.query_one("#apply-status", Static)
        if outcome is None:
            status.update(Text(error, style="red"))
        else:
            status.update(Text(f"{self.plan.title}: {outcome}.", style="bold green"))


class InterruptedPlan(ModalScreen[Literal["resume", "rollback"] | None]):
    """Shown at start when the journal holds a plan that did not finish."""

    BINDINGS = [Binding("r", "choose('resume')", "Resume"), Binding("b", "choose('rollback')", "Roll back"),
                Binding("escape", "choose('')", "Later")]

    def __init__(self, plan: Plan, done_steps: list[str]) -> None:
        super().__init__()
        self.plan = plan
        self.done_steps = done_steps

    def compose(self) -> ComposeResult:
        done = ", ".join(self.done_steps) or "none"
        with Vertical(id="interrupted"):
            yield Static(f"[b]An earlier plan did not finish:[/] {self.plan.title}\n"
                         f"Steps that ran: {done}.\n\n"
                         "[b]r[/] resume it (steps already in effect are skipped), [b]b[/] roll back the steps that "
                         "took effect, [b]Esc[/] decide later (`cachewise apply --resume` / `--rollback`).")

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice or None)  # type: ignore[arg-type]
