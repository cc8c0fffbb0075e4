"""Notice block devices appearing and disappearing, for the TUI's live Disks screen.

udev events come through a pyudev netlink monitor (from udevd when it runs, else straight
from the kernel). Netlink is not always there (network namespaces, containers), so the
watcher also compares the list of /sys/class/block entries once a second; either source
reports a change within about a second.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from advisor.collect import SYS_BLOCK, udev_state

log = logging.getLogger("cachewise.hotplug")


def sysfs_listing(root: Path = SYS_BLOCK) -> frozenset[str]:
    try:
        return frozenset(os.listdir(root))
    except OSError:
        return frozenset()


class HotplugWatcher:
    """Calls ``on_change(reason)`` from a background thread whenever block devices change."""

    def __init__(self, on_change: Callable[[str], None], interval: float = 1.0) -> None:
        self._on_change = on_change
        self._interval = interval
        self._stop = threading.Event()
        self._monitor = self._open_monitor()

    @staticmethod
    def _open_monitor() -> object | None:
        try:
            import pyudev

            context = pyudev.Context()
            source = "udev" if udev_state() == "running" else "kernel"
            monitor = pyudev.Monitor.from_netlink(context, source=source)
            monitor.filter_by("block")
            monitor.start()
            return monitor
        except Exception as exc:  # noqa: BLE001 - any failure means: poll sysfs only
            log.info("no netlink monitor (%s); polling /sys/class/block", exc)
            return None

    @property
    def source(self) -> str:
        return "netlink + sysfs" if self._monitor is not None else "sysfs"

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Block until :meth:`stop`; meant for a thread worker."""
        last = sysfs_listing()
        while not self._stop.is_set():
            if self._monitor is not None:
                device = self._monitor.poll(timeout=self._interval)  # type: ignore[attr-defined]
                if device is not None:
                    self._on_change(f"{device.action} {device.sys_name}")
                    last = sysfs_listing()
                    continue
            else:
                self._stop.wait(self._interval)
            now = sysfs_listing()
            if now != last:
                added, removed = sorted(now - last), sorted(last - now)
                last = now
                self._on_change(" ".join([*(f"add {n}" for n in added), *(f"remove {n}" for n in removed)]))
