"""A plan's preview that saves it, as JSON or an Ansible playbook: the last step of Plan only, and
the preview of any plan that cannot be applied from here (a saved snapshot's, or without root).
The save box stays in view under the preview at every size."""

from __future__ import annotations

import re
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Input, Static

from advisor.plan.model import Plan
from cachewise.render import plan_preview
from screens.base import CoreScreen
from screens.files import SaveBox
from screens.flows.model import Flow
from screens.flows.steps import StepBar

WHY = {
    "plan": "Plan only: nothing here is changed. Save the plan as",
    "snapshot": "Made from a saved snapshot: it cannot be applied here. Save it, to apply on that machine, as",
    "root": "Applying needs root (sudo cachewise). Save the plan, to apply with sudo, as",
    "instead": "Nothing has run. Save the plan instead, to apply later or on another machine, as",
}


class SavePlan(CoreScreen):
    """A plan's preview, saved as JSON or an Ansible playbook."""

    STEP = "Save the plan"
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    HELP = (
        "The plan, as it would run: what it destroys, then the exact commands. Choose JSON (for `sudo cachewise "
        "apply FILE`) or an Ansible playbook, name the file (Tab completes the path, Ctrl+O browses the folders) "
        "and press Enter. Nothing on this machine is changed; the plan is checked against the system again when "
        "it is applied. A plan made from a saved snapshot is applied on that machine; without root, with sudo."
    )
    DEFAULT_CSS = "SavePlan #save-plan { height: 1fr; padding: 0 1; }"

    def __init__(self, flow: Flow | None, plan: Plan, why: str = "plan") -> None:
        super().__init__()
        self.flow = flow
        self.plan = plan
        self.why = why

    @property
    def saved(self) -> Path | None:
        return self.query_one(SaveBox).saved

    def compose(self) -> ComposeResult:
        target = re.sub(r"[^\w.-]+", "-", self.plan.target.removeprefix("/dev/")).strip("-")
        yield Header()
        if self.flow is not None:
            steps = self.flow.steps
            yield StepBar(self.flow, self.STEP if self.STEP in steps else steps[-2 if self.flow.kind == "add" else -1])
        with VerticalScroll(id="save-plan"):
            yield Static(plan_preview(self.plan), id="plan-preview")
        yield SaveBox(self.plan, Path.cwd() / f"cachewise-plan-{target}.json", WHY.get(self.why, WHY["plan"]))
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#save-path", Input).focus(scroll_visible=False)
