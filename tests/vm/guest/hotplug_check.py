"""Guest side of the hot-plug check: run the real TUI headless with live discovery, remove a
SCSI disk through sysfs, bring it back with a host rescan, and time how long the Disks
screen takes to show each change. Writes the timings as JSON.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import sys
import time
from pathlib import Path


def find_by_serial(serial: str) -> str | None:
    for d in glob.glob("/sys/block/sd*"):
        vpd = Path(d, "device/vpd_pg80")
        if vpd.exists() and vpd.read_bytes()[4:].replace(b"\0", b"").strip().decode() == serial:
            return os.path.basename(d)
    return None


async def wait_for(predicate, limit: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if predicate():
            return time.monotonic() - start
        await asyncio.sleep(0.05)
    return None


async def main(serial: str, out: str) -> None:
    import logging

    logging.basicConfig(filename=out + ".log", level=logging.INFO, format="%(relativeCreated)d %(name)s: %(message)s")
    from advisor.runner import CommandRunner
    from cachewise.core import Core, LiveDiscovery
    from screens.app import CachewiseApp
    from screens.disks import DisksScreen

    name = find_by_serial(serial)
    assert name, f"no disk with serial {serial}"
    host = Path(f"/sys/block/{name}/device").resolve().parts
    scsi_host = next(p for p in host if p.startswith("host"))
    runner = CommandRunner()
    app = CachewiseApp(Core(LiveDiscovery(runner), runner, live=True))
    result: dict[str, object] = {"disk": name, "scsi_host": scsi_host}
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, DisksScreen)

        def shown() -> set[str]:
            return {d.name for d in screen.inventory.devices} if screen.inventory else set()

        def in_table(dev: str) -> bool:
            from textual.widgets import DataTable
            return dev in screen.query_one("#devices", DataTable).rows

        async def idle() -> None:
            # Measure from a settled screen, as when a person plugs a disk in: no scan running.
            while True:
                if await wait_for(lambda: not screen.scanning, 30) is None:
                    raise AssertionError("the Disks screen never finished scanning")
                await asyncio.sleep(1.0)
                if not screen.scanning:
                    return

        # The first full scan, not what is measured here: it took 15 s under emulation without
        # udev (blkid of 14 devices and the LVM reports), 0.3 s on real hardware.
        result["initial_seconds"] = await wait_for(lambda: in_table(name), 60)
        await idle()
        result["watcher"] = type(screen._watcher).__name__ if screen._watcher else None
        if screen._watcher is not None:
            result["watch_source"] = screen._watcher.source
        # Three remove/add cycles: under emulation a single pass can stall for a second or two
        # (a TCG hiccup, a garbage collection); the median is what a person would see.
        removed, added, kernel_add = [], [], []
        current = name
        for _ in range(3):
            Path(f"/sys/block/{current}/device/delete").write_text("1")
            removed.append(await wait_for(lambda c=current: not in_table(c), 5))
            await idle()
            Path(f"/sys/class/scsi_host/{scsi_host}/scan").write_text("- - -")
            # SCSI disks are probed asynchronously: the rescan returns before the kernel adds
            # the disk. The clock starts when the disk exists, as when a person plugs it in.
            appeared = await wait_for(lambda: find_by_serial(serial) is not None, 10)
            kernel_add.append(appeared)
            back = find_by_serial(serial)
            added.append(await wait_for(lambda b=back: b is not None and in_table(b), 5))
            current = back or current
            await idle()
        result["removed_all"], result["added_all"], result["kernel_add_all"] = removed, added, kernel_add
        done = [x for x in removed if x is not None]
        result["removed_seconds"] = sorted(done)[len(done) // 2] if len(done) == 3 else None
        done = [x for x in added if x is not None]
        result["added_seconds"] = sorted(done)[len(done) // 2] if len(done) == 3 else None
        result["readded_as"] = current
        result["status_line"] = str(screen.query_one("#status").render())
        result["rows"] = [str(k.value) for k in screen.query_one("#devices").rows]
        await pilot.press("q")
    Path(out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.path.insert(0, os.environ.get("CW_REPO", "."))
    asyncio.run(main(sys.argv[1], sys.argv[2]))
