"""The cachewise Textual app. Constructed with its backends so tests can hand it fakes."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from textual.app import App

from advisor.devices import Inventory
from advisor.discovery import discover
from advisor.runner import CommandRunner
from screens.disks import DisksScreen


class DiscoveryBackend(Protocol):
    def scan(self) -> Inventory: ...


class LiveDiscovery:
    """Discovery on this machine."""

    def __init__(self, runner: CommandRunner) -> None:
        self.runner = runner

    def scan(self) -> Inventory:
        return discover(self.runner)


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
    ) -> None:
        super().__init__()
        self.discovery = discovery
        self.state_dir = state_dir
        self.watch_hotplug = watch_hotplug

    def on_mount(self) -> None:
        self.push_screen(DisksScreen(watch_hotplug=self.watch_hotplug))
