"""The hot-plug watcher's sysfs fallback, for places where netlink events never arrive."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

import pytest

from advisor.disks import hotplug


def test_sysfs_listing_changes_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hotplug, "_open_monitors", lambda: [])  # as in a container: no netlink
    (tmp_path / "sda").mkdir()
    seen: queue.Queue[list[tuple[str, str]]] = queue.Queue()
    watcher = hotplug.HotplugWatcher(seen.put, interval=0.05, root=tmp_path)
    assert watcher.source == "sysfs"
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        (tmp_path / "sdb").mkdir()
        assert seen.get(timeout=2) == [("add", "sdb")]
        (tmp_path / "sda").rmdir()
        assert seen.get(timeout=2) == [("remove", "sda")]
    finally:
        watcher.stop()
        thread.join(timeout=2)
    assert not thread.is_alive()
