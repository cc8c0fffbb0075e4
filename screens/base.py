"""What every cachewise screen shares: what it uses of the App (typed), the way it goes to another
screen (the App's navigator: no screen imports another), and one handler for a background job
that failed.

The App (screens/app.py) implements :class:`Services`; screens reach it as ``self.services``.
The navigator (screens/navigator.py) implements :class:`Navigator`; screens reach it as
``self.nav``. Both are Protocols here, so a screen depends on what it uses, not on the modules
that provide it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol, cast

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from advisor.advice.model import Inputs
from advisor.apply.journal import Journal
from advisor.disks.devices import Inventory
from advisor.disks.probe import ProbeResult
from advisor.errors import CachewiseError
from advisor.plan.model import Plan
from advisor.workload.analysis import Analysis
from cachewise.core import Core
from screens.flows.model import Flow, FlowKind
from screens.phrases import word
from screens.widgets import Curve


class Navigator(Protocol):
    """Every way one screen leads to another."""

    def start(self) -> None: ...
    async def start_flow(self, kind: FlowKind) -> None: ...
    def step(self, flow: Flow, name: str) -> None: ...
    def apply(
        self,
        plan: Plan,
        journal: Journal | None = None,
        rollback: bool = False,
        flow: Flow | None = None,
        curve: Curve | None = None,
    ) -> None: ...
    def recommend(self, inputs: Inputs, inventory: Inventory | None, flow: Flow | None = None) -> None: ...
    def save_plan(self, flow: Flow | None, plan: Plan, why: str = "plan") -> None: ...
    def analysis(self, analysis: Analysis) -> None: ...
    async def ask_trace(self) -> Path | None: ...
    async def ask_trace_seconds(self) -> float | None: ...
    async def ask_probe_busy(self, question: str) -> bool: ...
    async def ask_accept_loss(self, question: str) -> bool: ...
    async def ask_device(self, question: str, choices: list[tuple[str, str, str | None]]) -> str | None: ...
    async def ask_interrupted(self, plan: Plan, steps: list[str]) -> Literal["resume", "rollback"] | None: ...
    async def warmup(self, target: str, flow: Flow | None = None, curve: Curve | None = None) -> bool: ...
    def doctor(self) -> None: ...
    def help(self, about: Screen[object]) -> None: ...


class Services(Protocol):
    """What screens use of the App."""

    core: Core
    probe_seconds: float
    probes: dict[str, ProbeResult]  # this session's probe results (and the history's), by probe_key
    nav: Navigator

    def warn_from_thread(self, warning: CachewiseError | None) -> None: ...
    def call_from_thread(self, callback: Callable[..., object], *args: object, **kwargs: object) -> object: ...


class CoreScreen(Screen[None]):
    @property
    def services(self) -> Services:
        return cast("Services", self.app)

    @property
    def core(self) -> Core:
        return self.services.core

    @property
    def nav(self) -> Navigator:
        return self.services.nav

    def refuse(self, error: CachewiseError, severity: Literal["warning", "error"] = "warning") -> None:
        """Say why something was refused, in the TUI's own words."""
        self.notify(word(error), severity=severity, timeout=15)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.worker_failed(event.worker, event.worker.error)

    def worker_failed(self, worker: Worker[object], error: BaseException) -> None:
        """A background job of this screen failed: say so (a screen may show it in place)."""
        if isinstance(error, CachewiseError):
            self.notify(word(error), severity="error", timeout=15)
            return
        what = worker.description or worker.name or "a background job"
        self.notify(f"{what} failed: {error}. Nothing was changed.", severity="error", timeout=15)
