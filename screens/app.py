"""The cachewise Textual app, constructed with the application core (cachewise/core.py) and
its backends, so tests can hand it fakes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.app import App

from advisor.disks.probe import DEFAULT_SECONDS
from cachewise.core import Core
from screens.disks import DisksScreen

if TYPE_CHECKING:
    from advisor.apply.journal import Journal
    from advisor.watch.sampler import CacheRef


class CachewiseApp(App[None]):
    TITLE = "cachewise"
    SUB_TITLE = "SSD caches for hard disks, without guessing"
    CSS_PATH = "cachewise.tcss"
    BINDINGS = [("q", "quit", "Quit")]

    def __init__(self, core: Core, watch_hotplug: bool = True, probe_seconds: float = DEFAULT_SECONDS,
                 watch: CacheRef | None = None) -> None:
        super().__init__()
        self.core = core
        self.watch_hotplug = watch_hotplug
        self.probe_seconds = probe_seconds
        self.warmup_ref = watch  # `cachewise tui --watch`: open on this cache's Warm-up screen

    def on_mount(self) -> None:
        self.push_screen(DisksScreen(watch_hotplug=self.watch_hotplug))
        if self.warmup_ref is not None:
            from screens.warmup import WarmupScreen

            self.push_screen(WarmupScreen(self.warmup_ref))
        pending = self.core.pending()
        damaged = next((j.problem() for j in pending if j.problem()), None)
        if damaged:
            self.notify(f"{damaged}. Nothing was changed. Look at it, then set it aside with `cachewise apply "
                        "--abandon JOURNAL`.", severity="error", timeout=30)
        elif pending:
            self.offer_resume(pending[-1])

    def warn_from_thread(self, warning: str | None) -> None:
        """Show a warning the core returned (a history write that failed), from a thread worker."""
        if warning:
            self.call_from_thread(self.notify, warning, severity="warning")

    @work(group="journal", exit_on_error=False)
    async def offer_resume(self, journal: Journal) -> None:
        """An earlier plan was interrupted: offer to resume or roll it back."""
        from screens.apply import ApplyScreen, InterruptedPlan

        plan = journal.plan
        choice = await self.push_screen_wait(InterruptedPlan(plan, journal.steps_run()))
        if choice is None:
            return
        await self.push_screen(ApplyScreen(plan, journal=journal, rollback=choice == "rollback"))
