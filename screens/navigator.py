"""Where each screen leads: the one module that knows every screen, so no screen imports another.

Screens go on through ``self.nav`` (the Navigator protocol in screens/base.py): a step of a
guided flow by its name, the preview of a plan, the recommendation, a dialog whose answer comes
back to the screen that asked, or the Warm-up screen of a cache.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal, cast

from textual.app import App
from textual.screen import Screen

from advisor.advice.model import Inputs
from advisor.apply.journal import Journal
from advisor.disks.devices import Inventory
from advisor.errors import CachewiseError
from advisor.plan.model import Plan
from advisor.workload.analysis import Analysis
from cachewise.core import watch
from screens.analysis import AnalysisScreen
from screens.apply import ApplyScreen
from screens.base import Services
from screens.dialogs import ChooseDevice, ConfirmLoss, ConfirmProbe, InterruptedPlan, OpenTrace, TraceWindow
from screens.doctor import DoctorScreen
from screens.flows.measure import MeasureStep
from screens.flows.model import Flow, FlowKind
from screens.flows.pick_cached import PickCached
from screens.flows.pick_fast import PickFast
from screens.flows.pick_slow import PickSlow
from screens.flows.save_plan import SavePlan
from screens.flows.start import StartScreen, cannot_apply
from screens.flows.steps import FlowScreen
from screens.flows.workload import WorkloadStep
from screens.help import HelpScreen
from screens.phrases import word
from screens.recommend import RecommendScreen
from screens.warmup import WarmupScreen
from screens.widgets import Curve

# The steps of the guided flows that are their own screens, by the name the step bar shows.
STEPS: dict[str, type[FlowScreen]] = {
    "Slow device": PickSlow,
    "Fast device": PickFast,
    "Measure": MeasureStep,
    "Workload": WorkloadStep,
    "Cached device": PickCached,
}


class Navigator:
    def __init__(self, app: App[None]) -> None:
        self.app = app
        self.services = cast(Services, app)

    def start(self) -> None:
        self.app.push_screen(StartScreen())

    async def start_flow(self, kind: FlowKind) -> None:
        """Begin a guided flow from wherever the user is: back to the start screen, then its first step."""
        app = self.app
        while len(app.screen_stack) > 2 and not isinstance(app.screen, StartScreen):
            await app.pop_screen()
        if not isinstance(app.screen, StartScreen):
            await app.push_screen(StartScreen())
        start = app.screen
        assert isinstance(start, StartScreen)
        start.begin(kind)

    def step(self, flow: Flow, name: str) -> None:
        self.app.push_screen(STEPS[name](flow))

    def apply(
        self,
        plan: Plan,
        journal: Journal | None = None,
        rollback: bool = False,
        flow: Flow | None = None,
        curve: Curve | None = None,
    ) -> None:
        """The plan's preview: to apply on confirmation, or, when it cannot be applied from here (a
        saved snapshot's plan, or this machine's without root), to save."""
        where = cannot_apply(self.services.core)
        if journal is None and where is not None:
            self.app.push_screen(SavePlan(flow, plan, where))
            return
        self.app.push_screen(ApplyScreen(plan, journal=journal, rollback=rollback, flow=flow, curve=curve))

    def recommend(self, inputs: Inputs, inventory: Inventory | None, flow: Flow | None = None) -> None:
        self.app.push_screen(RecommendScreen(inputs, inventory, flow=flow))

    def save_plan(self, flow: Flow | None, plan: Plan, why: str = "plan") -> None:
        self.app.push_screen(SavePlan(flow, plan, why))

    def analysis(self, analysis: Analysis) -> None:
        self.app.push_screen(AnalysisScreen(analysis))

    async def ask_trace(self) -> Path | None:
        return await self.app.push_screen_wait(OpenTrace())

    async def ask_trace_seconds(self) -> float | None:
        return await self.app.push_screen_wait(TraceWindow())

    async def ask_probe_busy(self, question: str) -> bool:
        answer: bool = await self.app.push_screen_wait(ConfirmProbe(question))
        return answer

    async def ask_accept_loss(self, question: str) -> bool:
        answer: bool = await self.app.push_screen_wait(ConfirmLoss(question))
        return answer

    async def ask_device(self, question: str, choices: list[tuple[str, str, str | None]]) -> str | None:
        answer: str | None = await self.app.push_screen_wait(ChooseDevice(question, choices))
        return answer

    async def ask_interrupted(self, plan: Plan, steps: list[str]) -> Literal["resume", "rollback"] | None:
        return await self.app.push_screen_wait(InterruptedPlan(plan, steps))

    async def warmup(self, target: str, flow: Flow | None = None, curve: Curve | None = None) -> bool:
        """Find the cache ``target`` names (in a thread: the core runs dmsetup) and open its Warm-up
        screen; a refusal is shown as a notification. At the end of a guided flow the flow's steps
        are closed first, so Esc on the Warm-up screen goes back to the start."""
        app = self.app
        try:
            ref = await asyncio.to_thread(watch.target, self.services.core, target)
        except CachewiseError as exc:
            app.notify(word(exc), severity="error", timeout=15)
            return False
        screen = WarmupScreen(ref, flow=flow, curve=curve)
        if flow is None:
            await app.push_screen(screen)
            return True

        async def land() -> None:  # after this worker's screen has closed
            while len(app.screen_stack) > 2 and not isinstance(app.screen, StartScreen):
                await app.pop_screen()
            await app.push_screen(screen)

        app.call_later(land)
        return True

    def doctor(self) -> None:
        """What is wrong with the caches, each finding with its cause and fix."""
        self.app.push_screen(DoctorScreen())

    def help(self, about: Screen[object]) -> None:
        if not isinstance(self.app.screen, HelpScreen):
            self.app.push_screen(HelpScreen(about))
