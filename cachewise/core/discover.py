"""Discover: the disks of this machine (or of a saved snapshot), recorded in the history, with
the newest probe of each."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory
from advisor.disks.probe import ProbeResult
from advisor.errors import CachewiseError
from advisor.history import History
from cachewise.core.context import Core
from cachewise.core.files import write_new


def scan(
    core: Core, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
) -> Inventory:
    return core.discovery.scan(quick=quick, should_stop=should_stop, changed=changed)


def scan_saving_raw(core: Core, path: Path) -> Inventory:
    """A full scan whose raw facts are also saved to ``path`` (a new file), for bug reports and
    test fixtures."""
    raw = core.discovery.collect()
    write_new(path, json.dumps(raw.to_json(), indent=1, sort_keys=True) + "\n", "nothing was saved")
    return build_inventory(raw)


def record_inventory(core: Core, inv: Inventory) -> CachewiseError | None:
    return None if core.replay else core.record(lambda h: h.record_inventory(inv))


def earlier_probes(core: Core, inv: Inventory) -> tuple[dict[str, ProbeResult], CachewiseError | None]:
    """The newest complete probe of each device with an identity, by identity; and a warning
    when the history could not be read."""
    found: dict[str, ProbeResult] = {}

    def read(hist: History) -> None:
        for dev in inv.devices:
            if dev.identity and dev.identity not in found:
                data = hist.latest_probe(dev.identity, dev.size_bytes)
                if data is None:
                    continue
                try:
                    found[dev.identity] = ProbeResult.from_json(data)
                except (TypeError, ValueError, KeyError, AttributeError):
                    continue  # a probe another version recorded: measured again when needed

    return found, core.record(read)


def scan_json(inv: Inventory, show_all: bool = False) -> dict[str, Any]:
    """The scan's JSON (schema cachewise.scan/1)."""
    return inv.to_json(show_all=show_all)
