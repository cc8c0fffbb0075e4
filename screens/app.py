"""The cachewise Textual app, constructed with the application core (cachewise/core/) and its
backends, so tests can hand it fakes. It is the :class:`~screens.base.Services` every screen
uses, and holds the navigator (screens/navigator.py) through which screens lead to others."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from advisor.apply.journal import Journal
from advisor.disks.probe import DEFAULT_SECONDS, ProbeResult
from advisor.errors import CachewiseError
from advisor.watch.sampler import CacheRef
from cachewise.core import Core, apply
from screens.disks import DisksScreen
from screens.flows.model import START_CHOICES, FlowKind
from screens.help import screen_actions
from screens.navigator import Navigator
from screens.phrases import word
from screens.warmup import WarmupScreen


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
        watch_interval: float = 1.0,
    ) -> None:
        super().__init__()
        self.core = core
        self.start = start  # open on the start screen (the guided flows), over the Disks screen
        self.watch_hotplug = watch_hotplug
        self.probe_seconds = probe_seconds
        self.probes: dict[str, ProbeResult] = {}  # this session's probe results, by probe_key
        self.warmup_ref = watch  # `cachewise tui --watch`: open on this cache's Warm-up screen
        self.watch_interval = watch_interval  # a recording plays at the pace it was sampled
        self.nav = Navigator(self)

    def on_mount(self) -> None:
        if self.core.recorded:
            self.sub_title = "a recording played back: nothing here reads or changes this machine's disks"
        elif self.core.replay:
            self.sub_title = "a saved snapshot: nothing here reads or changes this machine's disks"
        self.push_screen(DisksScreen(watch_hotplug=self.watch_hotplug))
        if self.start and self.warmup_ref is None:
            self.nav.start()
        if self.warmup_ref is not None:
            self.push_screen(WarmupScreen(self.warmup_ref, interval=self.watch_interval))
        pending = apply.interrupted(self.core)
        if pending.damaged is not None:
            self.notify(word(apply.damaged(pending.damaged)), severity="error", timeout=30)
        elif pending.latest is not None:
            self.offer_resume(pending.latest)

    def action_help(self) -> None:
        self.nav.help(self.screen)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The command palette (Ctrl+P): every action of cachewise the screen answers to now, each
        with what it does and its keys, then the guided flows, then of Textual's own only the
        display's theme (its copy, quit, keys and screenshot commands are not cachewise's)."""
        for a in screen_actions(screen):
            if a.enabled:
                yield SystemCommand(a.title, f"{a.about} ({a.keys})", partial(self.run_action, a.action, a.node))
        for kind, label, about in START_CHOICES:
            if kind in ("add", "remove", "plan"):
                yield SystemCommand(f"Guided: {label}", about, partial(self.start_flow, kind))  # type: ignore[arg-type]
        yield SystemCommand(
            "Display: theme", "Change the colours of the whole app (nothing else changes)", self.action_change_theme
        )

    async def start_flow(self, kind: FlowKind) -> None:
        """Begin a guided flow from wherever the user is."""
        await self.nav.start_flow(kind)

    def warn_from_thread(self, warning: CachewiseError | None) -> None:
        """Show a warning the core returned (a history write that failed), from a thread worker."""
        if warning is not None:
            self.call_from_thread(self.notify, word(warning), severity="warning")

    @work(group="journal", exit_on_error=False)
    async def offer_resume(self, journal: Journal) -> None:
        """An earlier plan was interrupted: offer to resume or roll it back."""
        plan = journal.plan
        choice = await self.nav.ask_interrupted(plan, journal.steps_run())
        if choice is None:
            return
        self.nav.apply(plan, journal=journal, rollback=choice == "rollback")
