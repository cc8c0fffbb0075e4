"""What the core is constructed with, so tests can hand it fakes: discovery, the prober and the
executor, each live on this machine or replayed from a saved snapshot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from advisor.apply.journal import Journal, locked, unfinished_journals
from advisor.apply.preflight import Problem, preflight
from advisor.apply.run import Event, apply, rollback
from advisor.apply.state import LiveState
from advisor.disks.collect import RawSystem, collect, refresh
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import build_inventory
from advisor.disks.probe import ProbeProgress, ProbeResult, probe_device
from advisor.plan.model import Plan
from advisor.runner import CommandRunner


class DiscoveryBackend(Protocol):
    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        """Discover devices. ``quick`` runs no external tools and may reuse earlier answers;
        with ``changed`` it re-reads only those devices. A full scan asks ``should_stop``
        between tool runs and raises ScanInterrupted."""
        ...

    def collect(self) -> RawSystem:
        """The raw facts of a full scan (a snapshot to save)."""
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

    def collect(self) -> RawSystem:
        self._last = self._quick = collect(self.runner)
        return self._last


class ReplayDiscovery:
    """Discovery replayed from a raw snapshot of some machine, for bug reports, demos and tests:
    the screen shows exactly what that machine showed."""

    def __init__(self, raw: RawSystem) -> None:
        self.raw = raw

    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        return build_inventory(self.raw)

    def collect(self) -> RawSystem:
        return self.raw


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
    """Checks and runs plans (advisor.apply)."""

    def preflight(self, plan: Plan, resuming: bool = False) -> list[Problem]: ...

    def apply(self, plan: Plan, report: Callable[[Event], None], journal: Journal | None = None) -> str: ...

    def rollback(self, journal: Journal, report: Callable[[Event], None]) -> str: ...

    def pending(self) -> list[Journal]: ...


class LiveExecutor:
    def __init__(self, runner: CommandRunner, state_dir: Path) -> None:
        self.runner = runner
        self.state_dir = state_dir

    def preflight(self, plan: Plan, resuming: bool = False) -> list[Problem]:
        return preflight(plan, self.runner, LiveState.read(self.runner, plan), resuming=resuming)

    def apply(self, plan: Plan, report: Callable[[Event], None], journal: Journal | None = None) -> str:
        with locked(self.state_dir):
            apply(plan, self.runner, self.state_dir, report, journal=journal)
        return "done"

    def rollback(self, journal: Journal, report: Callable[[Event], None]) -> str:
        with locked(self.state_dir):
            rollback(journal, self.runner, self.state_dir, report)
        return "rolled back"

    def pending(self) -> list[Journal]:
        return unfinished_journals(self.state_dir) if self.state_dir.is_dir() else []
