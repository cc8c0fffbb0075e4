"""Notice block devices appearing and disappearing, for the TUI's live Disks screen.

Three sources, whichever speaks first:
- the kernel's own uevents (netlink, no udev needed): a new disk is in sysfs when its event
  arrives, long before udev has run its rules on a slow machine;
- udev's events, when udevd runs: they say the by-id links and properties are ready;
- a once-a-second comparison of /sys/class/block, for places where netlink is not delivered
  (network namespaces, containers).
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.disks.collect import SYS_BLOCK, udev_state

log = logging.getLogger("cachewise.hotplug")

Changes = list[tuple[str, str]]


def sysfs_listing(root: Path = SYS_BLOCK) -> frozenset[str]:
    try:
        return frozenset(os.listdir(root))
    except OSError:
        return frozenset()


def _open_monitors() -> list[tuple[str, Any]]:
    """(source, monitor) pairs for the netlink sources that can be opened here."""
    monitors: list[tuple[str, Any]] = []
    try:
        import pyudev  # lazy: libudev, loaded only when hot-plug is watched (it may be missing)

        context = pyudev.Context()
    except Exception as exc:  # noqa: BLE001 - no libudev: poll sysfs only
        log.info("no libudev (%s); polling /sys/class/block", exc)
        return monitors
    sources = ["kernel", "udev"] if udev_state() == "running" else ["kernel"]
    for source in sources:
        try:
            monitor = pyudev.Monitor.from_netlink(context, source=source)
            monitor.filter_by("block")
            monitor.start()
            monitors.append((source, monitor))
        except Exception as exc:  # noqa: BLE001 - this source is unavailable here
            log.info("no %s netlink monitor (%s)", source, exc)
    return monitors


class HotplugWatcher:
    """Calls ``on_change(changes)`` from a background thread whenever block devices change;
    ``changes`` is a list of (action, kernel name) pairs such as ("remove", "sdb")."""

    def __init__(self, on_change: Callable[[Changes], None], interval: float = 1.0, root: Path = SYS_BLOCK) -> None:
        self._on_change = on_change
        self._interval = interval
        self._root = root
        self._listing = sysfs_listing(root)  # changes count from the watcher's creation
        self._stop = threading.Event()
        self._monitors = _open_monitors()

    @property
    def source(self) -> str:
        return " + ".join([*(name for name, _ in self._monitors), "sysfs"])

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Block until :meth:`stop`; meant for a thread worker."""
        last = self._listing
        while not self._stop.is_set():
            changes: Changes = []
            if self._monitors:
                ready, _, _ = select.select([m for _, m in self._monitors], [], [], self._interval)
                for monitor in ready:
                    while (device := monitor.poll(timeout=0)) is not None:
                        changes.append((str(device.action), str(device.sys_name)))
            else:
                self._stop.wait(self._interval)
            now = sysfs_listing(self._root)
            if not changes and now != last:
                changes = [*(("add", n) for n in sorted(now - last)), *(("remove", n) for n in sorted(last - now))]
            last = now
            if changes:
                log.info("block devices changed: %s", changes)
                self._on_change(changes)
