"""Plan only, last step: the plan's preview, saved as JSON or an Ansible playbook."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Input, Select, Static

from advisor.errors import CachewiseError
from advisor.plan.model import Plan
from cachewise.core import plans
from cachewise.render import plan_preview
from screens.flows.model import Flow
from screens.flows.steps import FlowScreen
from screens.phrases import word


class SavePlan(FlowScreen):
    """Plan only, last step: the plan's preview, saved as JSON or an Ansible playbook."""

    STEP = "Save the plan"
    HELP = (
        "The plan, as it would run: what it destroys, then the exact commands. Choose JSON (for `sudo cachewise "
        "apply FILE` on this machine) or an Ansible playbook, name the file and press Enter. Nothing on this "
        "machine is changed; the plan is checked against the system again when it is applied."
    )

    def __init__(self, flow: Flow, plan: Plan) -> None:
        super().__init__(flow)
        self.plan = plan
        self.saved: Path | None = None

    def compose(self) -> ComposeResult:
        target = re.sub(r"[^\w.-]+", "-", self.plan.target.removeprefix("/dev/")).strip("-")
        yield Header()
        yield self.step_bar()
        with VerticalScroll(id="save-plan"):
            yield Static(plan_preview(self.plan), id="plan-preview")
            yield Static("Save it as", id="save-title")
            yield Select(
                [("JSON, for `cachewise apply`", "json"), ("Ansible playbook", "ansible")],
                value="json",
                allow_blank=False,
                id="save-format",
            )
            yield Input(str(Path.cwd() / f"cachewise-plan-{target}.json"), id="save-path")
            yield Static(Text("Enter in the file name saves it.", style="dim"), id="save-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#save-path", Input).focus(scroll_visible=False)

    @on(Select.Changed, "#save-format")
    def _format(self, event: Select.Changed) -> None:
        box = self.query_one("#save-path", Input)
        path = Path(box.value)
        box.value = str(path.with_suffix(".yml" if event.value == "ansible" else ".json"))

    @on(Input.Submitted, "#save-path")
    def _save(self, event: Input.Submitted) -> None:
        fmt: Literal["json", "ansible"] = (
            "ansible" if self.query_one("#save-format", Select).value == "ansible" else "json"
        )
        path = Path(event.value.strip()).expanduser()
        try:
            plans.save(self.plan, path, fmt)
        except CachewiseError as exc:
            self.query_one("#save-status", Static).update(Text(word(exc), style="red"))
            return
        self.saved = path
        how = f"ansible-playbook -i HOSTS {path}" if fmt == "ansible" else f"sudo cachewise apply {path}"
        self.query_one("#save-status", Static).update(Text(f"Saved to {path}. Run it with: {how}", style="bold green"))
