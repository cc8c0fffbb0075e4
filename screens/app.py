"""The cachewise Textual app. Constructed with its backends so tests can hand it fakes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from textual.app import App

from advisor.collect import RawSystem, collect, refresh
from advisor.devices import Device, Inventory
from advisor.discovery import build_inventory
from advisor.probe import DEFAULT_SECONDS, ProbeProgress, ProbeResult, probe_device
from advisor.runner import CommandRunner
from screens.disks import DisksScreen


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
        """Measure one device read-only (advisor.probe.probe_device)."""
        ...


class LiveProber:
    def __init__(self, runner: CommandRunner) -> None:
        self.runner = runner

    def probe(self, device: Device, seconds: float, on_progress: Callable[[ProbeProgress], None]) -> ProbeResult:
        return probe_device(device, self.runner, seconds=seconds, on_progress=on_progress)


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
    ) -> None:
        super().__init__()
        self.discovery = discovery
        self.prober: Prober = prober or LiveProber(CommandRunner())
        self.probe_seconds = probe_seconds
        self.state_dir = state_dir
        self.watch_hotplug = watch_hotplug

    def on_mount(self) -> None:
        self.push_screen(DisksScreen(watch_hotplug=self.watch_hotplug))
