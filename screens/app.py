"""The cachewise Textual app. Constructed with its backends so tests can hand it fakes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from textual import work
from textual.app import App

from advisor.disks.collect import RawSystem, collect, refresh
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import build_inventory
from advisor.disks.probe import DEFAULT_SECONDS, ProbeProgress, ProbeResult, probe_device
from advisor.runner import CommandRunner
from screens.disks import DisksScreen

if TYPE_CHECKING:
    from advisor.apply.run import Event, Journal
    from advisor.plan.model import Plan


class DiscoveryBackend(Protocol):
    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        """Discover devices. ``quick`` runs no external tools and may reuse earlier answers;
        with ``changed`` it re-reads only those devices. A full scan asks ``should_stop``
        between tool runs and raises ScanInterrupted."""
        ...


class LiveDiscovery:
    """Discovery on this machine."""

    def __init__(self, runner: CommandRunner) -> None:
        self.runner = runner
        self._last: RawSystem | None = None  # the latest full scan
        self._quick: RawSystem | None = None  # the latest scan of any kind

    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        if quick and changed and self._quick is not None:
            raw = refresh(self._quick, changed)
        else:
            raw = collect(self.runner, tools=not quick, reuse=self._last, should_stop=should_stop)
        if not quick:
            self._last = raw
        self._quick = raw
        return build_inventory(raw)


class ReplayDiscovery:
    """Discovery replayed from a raw snapshot (``cachewise scan --save-raw``), for bug
    reports, demos and tests: the screen shows exactly what that machine showed."""

    def __init__(self, raw: RawSystem) -> None:
        self.raw = raw

    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        return build_inventory(self.raw)


class Prober(Protocol):
    def probe(self, device: Device, seconds: float, on_progress: Callable[[ProbeProgress], None]) -> ProbeResult:
        """Measure one device read-only (advisor.disks.probe.probe_device)."""
        ...


class LiveProber:
    def __init__(self, runner: CommandRunner) -> None:
        self.runner = runner

    def probe(self, device: Device, seconds: float, on_progress: Callable[[ProbeProgress], None]) -> ProbeResult:
        return probe_device(device, self.runner, seconds=seconds, on_progress=on_progress)


class Executor(Protocol):
    """Runs plans (advisor.apply.run), so tests can hand the app a fake."""

    def apply(self, plan: Plan, report: Callable[[Event], None], journal: Journal | None = None) -> str: ...

    def rollback(self, journal: Journal, report: Callable[[Event], None]) -> str: ...

    def pending(self) -> list[Journal]: ...


class LiveExecutor:
    def __init__(self, runner: CommandRunner, state_dir: Path) -> None:
        self.runner = runner
        self.state_dir = state_dir

    def _preflight(self, plan: Plan, resuming: bool) -> None:
        from advisor.apply.run import ApplyError, LiveState, preflight

        problems = preflight(plan, self.runner, LiveState.read(self.runner), resuming=resuming)
        if problems:
            raise ApplyError("the plan cannot run as things stand: " + "; ".join(problems) + ". Nothing was changed.")

    def apply(self, plan: Plan, report: Callable[[Event], None], journal: Journal | None = None) -> str:
        from advisor.apply.run import apply

        self._preflight(plan, resuming=journal is not None)
        apply(plan, self.runner, self.state_dir, report, journal=journal)
        return "done"

    def rollback(self, journal: Journal, report: Callable[[Event], None]) -> str:
        from advisor.apply.run import rollback

        rollback(journal, self.runner, self.state_dir, report)
        return "rolled back"

    def pending(self) -> list[Journal]:
        from advisor.apply.run import unfinished_journals

        return unfinished_journals(self.state_dir)


class CachewiseApp(App[None]):
    TITLE = "cachewise"
    SUB_TITLE = "SSD caches for hard disks, without guessing"
    CSS_PATH = "cachewise.tcss"
    BINDINGS = [("q", "quit", "Quit")]

    def __init__(
        self,
        discovery: DiscoveryBackend,
        state_dir: Path | None = None,
        watch_hotplug: bool = True,
        prober: Prober | None = None,
        probe_seconds: float = DEFAULT_SECONDS,
        executor: Executor | None = None,
    ) -> None:
        super().__init__()
        self.discovery = discovery
        self.prober: Prober = prober or LiveProber(CommandRunner())
        self.probe_seconds = probe_seconds
        self.state_dir = state_dir
        self.watch_hotplug = watch_hotplug
        self.executor: Executor | None = executor
        if executor is None and state_dir is not None:
            self.executor = LiveExecutor(CommandRunner(), state_dir)

    def on_mount(self) -> None:
        self.push_screen(DisksScreen(watch_hotplug=self.watch_hotplug))
        if self.executor is not None:
            pending = self.executor.pending()
            if pending:
                self.offer_resume(pending[-1])

    @work(group="journal", exit_on_error=False)
    async def offer_resume(self, journal: Journal) -> None:
        """An earlier plan was interrupted: offer to resume or roll it back."""
        from screens.apply import ApplyScreen, InterruptedPlan

        plan = journal.plan
        done = [r["step"] for r in journal.records() if r["event"] in ("step-end", "step-skip")]
        choice = await self.push_screen_wait(InterruptedPlan(plan, done))
        executor = self.executor
        if choice is None or executor is None:
            return
        if choice == "resume":
            await self.push_screen(ApplyScreen(plan, lambda report: executor.apply(plan, report, journal), "resume"))
        else:
            await self.push_screen(ApplyScreen(plan, lambda report: executor.rollback(journal, report), "roll back"))
