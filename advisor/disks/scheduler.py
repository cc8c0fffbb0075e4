"""When to scan the disks again: one loop scans at a time, a newer request overtakes the scan in
flight, and a hot-plug event is shown at once by a quick pass, the full pass (blkid and LVM's
reports: seconds on a slow machine) waiting until the events settle.

The Disks screen runs :meth:`ScanScheduler.run` in a thread worker and asks for scans with
:meth:`request`; tests/unit/test_scheduler.py drives it without a screen.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Literal, Protocol

from advisor.disks.collect import ScanInterrupted
from advisor.disks.devices import Inventory

log = logging.getLogger("cachewise.scan")
Pass = Literal["quick", "full"]


class Scan(Protocol):
    def __call__(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory: ...


class ScanScheduler:
    SETTLE_SECONDS = 0.5

    def __init__(self, scan: Scan, show: Callable[[Inventory, float, Pass], None]) -> None:
        """``scan`` discovers (as Core's discovery does); ``show`` gets each inventory worth
        showing with the seconds it took and which pass it was (called from the loop's thread)."""
        self._scan, self._show = scan, show
        self._lock = threading.Lock()
        self._running = False
        self._want_quick = False
        self._want_full = False
        self._changed: set[str] = set()
        self._settle_until = 0.0
        self.generation = 0

    @property
    def running(self) -> bool:
        """A scan loop is running or about to (a request started one)."""
        with self._lock:
            return self._running

    def request(self, quick_first: bool = False, changed: set[str] | None = None) -> bool:
        """Ask for a rescan; ``quick_first`` (a hot-plug event) shows the change at once, only the
        ``changed`` devices re-read. Each request starts a new generation: a full scan in flight
        stops at its next tool run and the loop starts over. True when no loop is running, so the
        caller must start :meth:`run`."""
        with self._lock:
            self.generation += 1
            self._want_quick |= quick_first
            self._changed |= changed or set()
            self._want_full = True
            if quick_first:
                self._settle_until = time.monotonic() + self.SETTLE_SECONDS
            start = not self._running
            self._running = True
        return start

    def run(self) -> None:
        """Scan until no request is left: the quick pass first when one is wanted, then the full
        pass once events have settled; a pass overtaken by a newer request is not shown."""
        try:
            while True:
                with self._lock:
                    generation = self.generation
                    changed: set[str] = set()
                    if self._want_quick:
                        self._want_quick = False
                        changed, self._changed = self._changed, set()
                        mode = "quick"
                    elif self._want_full and time.monotonic() < self._settle_until:
                        mode = "settle"
                    elif self._want_full:
                        self._want_full = False
                        mode = "full"
                    else:
                        self._running = False
                        return
                if mode == "settle":
                    time.sleep(0.05)
                    continue
                started = time.monotonic()
                log.info("%s scan starts (generation %d, changed %s)", mode, generation, sorted(changed))
                if mode == "quick":
                    inv = self._scan(quick=True, changed=changed or None)
                else:
                    try:
                        inv = self._scan(should_stop=lambda gen=generation: gen != self.generation)  # type: ignore[misc]
                    except ScanInterrupted:
                        continue
                    if generation != self.generation:
                        continue
                self._show(inv, time.monotonic() - started, "quick" if mode == "quick" else "full")
                log.info("%s scan shown after %.2f s", mode, time.monotonic() - started)
        except BaseException:
            with self._lock:
                self._running = False
            raise
