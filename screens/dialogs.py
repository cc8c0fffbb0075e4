"""The questions screens ask in a dialog over themselves: a trace file to open, how long to trace,
whether to probe a busy disk, what to do with an interrupted plan. Each is a modal screen whose
answer comes back to the screen that asked (through the navigator)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from advisor.plan.model import Plan
from screens.files import TRACES, PathInput, user_path

# A dialog is modal: the app's keys do not reach through it, so each answers F1 itself (? would
# go into its text box).
HELP_KEY = Binding("f1", "app.help", "Help")


class OpenTrace(ModalScreen[Path | None]):
    """Ask for a trace file (a cachewise trace, a fio iolog, blkparse text or CSV)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), HELP_KEY]

    def compose(self) -> ComposeResult:
        with Vertical(id="open-trace"):
            yield Static("Trace to analyse (cachewise trace, fio iolog, blkparse text or CSV):")
            yield PathInput(
                placeholder="/path/to/trace (Tab completes, Ctrl+O browses)", wanted=TRACES, id="trace-path"
            )
            yield Static("", id="open-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        path = user_path(event.value)
        if not path.is_file():
            self.query_one("#open-error", Static).update(f"[red]{path} is not a readable file.[/]")
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)


class TraceWindow(ModalScreen[float | None]):
    """How long to trace the slow device for."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), HELP_KEY]

    def compose(self) -> ComposeResult:
        with Vertical(id="trace-window"):
            yield Static(
                "Trace for how many seconds? A whole cycle of the workload is best (an hour, a day: "
                "cachewise trace --duration); a minute shows the shape."
            )
            yield Input("60", id="trace-seconds", type="number")
            yield Static("", id="trace-window-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            seconds = float(event.value)
        except ValueError:
            seconds = 0.0
        if not 5 <= seconds <= 86400:
            self.query_one("#trace-window-error", Static).update(Text("Between 5 and 86400 seconds.", style="red"))
            return
        self.dismiss(seconds)

    def action_cancel(self) -> None:
        self.dismiss(None)


class _YesOrNo(ModalScreen[bool]):
    """A question with a button that goes ahead (``YES``, in ``VARIANT``) and one that cancels."""

    YES = ""
    VARIANT: Literal["warning", "error"] = "warning"

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(self.question, id="question")
            with Horizontal(id="buttons"):
                yield Button(self.YES, id="yes", variant=self.VARIANT)
                yield Button("Cancel (n)", id="no", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class ConfirmProbe(_YesOrNo):
    """Ask before adding read load to a disk that is in use."""

    BINDINGS = [Binding("y", "answer(True)", "Probe"), Binding("n,escape", "answer(False)", "Cancel"), HELP_KEY]
    YES = "Probe anyway (y)"

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class ConfirmLoss(_YesOrNo):
    """Ask before a rescue that leaves out what only a dead SSD held (a writeback cache's dirty
    blocks): the loss is named here, and again in the plan's preview."""

    BINDINGS = [Binding("x", "accept_loss", "Accept the loss"), Binding("n,escape", "decline", "Cancel"), HELP_KEY]
    YES, VARIANT = "Rescue, accepting the loss (x)", "error"

    def action_accept_loss(self) -> None:
        self.dismiss(True)

    def action_decline(self) -> None:
        self.dismiss(False)


class ChooseDevice(ModalScreen[str | None]):
    """Ask which device a plan should use (a new SSD for a mirror's repair): the devices that can,
    and those that cannot greyed with the reason."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), HELP_KEY]

    def __init__(self, question: str, choices: list[tuple[str, str, str | None]]) -> None:
        """``choices``: (path, label, why not: None when it can)."""
        super().__init__()
        self.question = question
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(id="choose-device"):
            yield Static(self.question)
            options = [
                Option(
                    label if why is None else Text(f"{label}: {why}", style="dim"), id=path, disabled=why is not None
                )
                for path, label, why in self.choices
            ]
            if not any(why is None for *_, why in self.choices):
                yield Static(Text("No device here can be used; put one in and look again.", style="yellow"))
            yield OptionList(*options, id="device-choices")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected, "#device-choices")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class InterruptedPlan(ModalScreen[Literal["resume", "rollback"] | None]):
    """Shown at start when the journal holds a plan that did not finish."""

    # Enter, not r: r rescans on the Disks screen underneath (one meaning per key).
    BINDINGS = [
        Binding("enter", "choose('resume')", "Resume"),
        Binding("b", "choose('rollback')", "Roll back"),
        Binding("escape", "choose('')", "Later"),
        HELP_KEY,
    ]
    HELP = (
        "A plan cachewise was applying did not finish (a crash, a power cut, a killed process). Resume runs "
        "the steps that did not take effect; roll back undoes the ones that did; Later leaves everything as "
        "it is (`cachewise apply --resume`, `--rollback` or `--abandon` from a shell)."
    )

    def __init__(self, plan: Plan, done_steps: list[str]) -> None:
        super().__init__()
        self.plan = plan
        self.done_steps = done_steps

    def compose(self) -> ComposeResult:
        done = ", ".join(self.done_steps) or "none"
        with Vertical(id="interrupted"):
            yield Static(
                f"[b]An earlier plan did not finish:[/] {self.plan.title}\n"
                f"Steps that ran: {done}.\n\n"
                "[b]Enter[/] resume it (steps already in effect are skipped), [b]b[/] roll back the steps that "
                "took effect, [b]Esc[/] decide later (`cachewise apply --resume` / `--rollback`)."
            )

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice or None)  # type: ignore[arg-type]
