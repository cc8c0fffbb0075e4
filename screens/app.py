"""The cachewise Textual app, constructed with the application core (cachewise/core.py) and
its backends, so tests can hand it fakes."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

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
    # One meaning per key on every screen (tests/tui/test_keys.py): q quits, and only from the
    # Disks screen at the top; Esc goes back; ? and F1 explain the screen.
    BINDINGS = [Binding("question_mark,f1", "help", "Help")]

    def __init__(
        self,
        core: Core,
        watch_hotplug: bool = True,
        probe_seconds: float = DEFAULT_SECONDS,
        watch: CacheRef | None = None,
        start: bool = False,
    ) -> None:
        super().__init__()
        self.core = core
        self.start = start  # open on the start screen (the guided flows), over the Disks screen
        self.watch_hotplug = watch_hotplug
        self.probe_seconds = probe_seconds
        self.warmup_ref = watch  # `cachewise tui --watch`: open on this cache's Warm-up screen

    def on_mount(self) -> None:
        self.push_screen(DisksScreen(watch_hotplug=self.watch_hotplug))
        if self.start and self.warmup_ref is None:
            from screens.flow import StartScreen

            self.push_screen(StartScreen())
        if self.warmup_ref is not None:
            from screens.warmup import WarmupScreen

            self.push_screen(WarmupScreen(self.warmup_ref))
        pending = self.core.pending()
        damaged = next((j.problem() for j in pending if j.problem()), None)
        if damaged:
            self.notify(
                f"{damaged}. Nothing was changed. Look at it, then set it aside with `cachewise apply "
                "--abandon JOURNAL`.",
                severity="error",
                timeout=30,
            )
        elif pending:
            self.offer_resume(pending[-1])

    def action_help(self) -> None:
        from screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The command palette (Ctrl+P) offers every action of the screen, the guided flows, then
        Textual's own."""
        from screens.flow import START_CHOICES
        from screens.help import key_label

        for key, active in screen.active_bindings.items():
            binding = active.binding
            if binding.description and active.enabled and binding.action != "help":
                yield SystemCommand(
                    binding.description, f"key {key_label(key)}", partial(self.run_action, binding.action, active.node)
                )
        for kind, label, about in START_CHOICES:
            if kind != "disks":
                yield SystemCommand(f"Guided: {label}", about, partial(self.start_flow, kind))
        yield from super().get_system_commands(screen)

    async def start_flow(self, kind: str) -> None:
        """Begin a guided flow from wherever the user is: back to the start screen, then its first step."""
        from screens.flow import StartScreen

        while len(self.screen_stack) > 2 and not isinstance(self.screen, StartScreen):
            await self.pop_screen()
        if not isinstance(self.screen, StartScreen):
            await self.push_screen(StartScreen())
        start = self.screen
        assert isinstance(start, StartScreen)
        start.begin(kind)

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
