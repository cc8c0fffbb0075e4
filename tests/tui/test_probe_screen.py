"""Probing from the Disks screen, with a fake prober that replays fio JSON captured in the lab."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from textual.widgets import DataTable

from advisor.disks.devices import Device, Inventory
from advisor.disks.probe import ProbeProgress, ProbeResult, classify, parse_fio
from cachewise.core import Core
from screens.app import CachewiseApp
from screens.dialogs import ConfirmProbe
from screens.disks import DisksScreen
from screens.probing import ProbePanel
from tests.conftest import FIXTURES
from tests.tui.test_disks_screen import FakeDiscovery, lab_inventory


class FakeProber:
    """Emits progress for each phase, then returns the lab's fio result for the device's serial."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.probed: list[str] = []
        self.gate = gate

    def probe(self, device: Device, seconds: float, on_progress: Callable[[ProbeProgress], None]) -> ProbeResult:
        self.probed.append(device.name)
        on_progress(ProbeProgress(device.name, "randread-qd1", "random 4 KiB reads, queue depth 1", 1.0, seconds, 153.0))
        if self.gate is not None:
            self.gate.wait(5)
        serial = "HDD0001" if device.serial == "HDD0001" else "SSD0001"
        fio = json.loads((FIXTURES / "lab-probe" / f"fio-{serial}.json").read_text())
        phases = parse_fio(fio)
        return ProbeResult(device.name, device.devnode, device.identity, device.size_bytes, device.rotational,
                           device.transport, tuple(phases), classify(phases, device.rotational, device.transport),
                           False, True, 7.0, "fio-3.33", (), fio)


def row_of(app: CachewiseApp, name: str) -> list[str]:
    table = app.screen.query_one("#devices", DataTable)
    return [str(cell) for cell in table.get_row(name)]


async def select(pilot, app: CachewiseApp, name: str) -> None:  # type: ignore[no-untyped-def]
    table = app.screen.query_one("#devices", DataTable)
    keys = [str(k.value) for k in table.rows]
    table.move_cursor(row=keys.index(name))
    await pilot.pause()


async def recommend_for(pilot, app: CachewiseApp, slow: str = "sda", fast: str = "nvme0n1") -> None:  # type: ignore[no-untyped-def]
    """From the Disks screen: mark the SSD, highlight the slow disk, press c, and let it settle."""
    await select(pilot, app, fast)
    await pilot.press("space")
    await select(pilot, app, slow)
    await pilot.press("c")
    await app.workers.wait_for_complete()
    await pilot.pause()


def device(inv: Inventory, serial: str) -> Device:
    return next(d for d in inv.devices if d.serial == serial)


async def test_probe_selected_disk_shows_progress_then_measured_class() -> None:
    inv = lab_inventory()
    hdd = device(inv, "HDD0001")
    gate = threading.Event()
    prober = FakeProber(gate)
    app = CachewiseApp(Core(FakeDiscovery(inv), prober=prober, live=False), watch_hotplug=False)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.workers.wait_for_complete()
        await select(pilot, app, hdd.name)
        await pilot.press("p")
        await pilot.pause(0.3)
        panel = app.screen.query_one(ProbePanel)
        assert "random 4 KiB reads, queue depth 1" in str(panel.lines[hdd.name]) and "153 IOPS" in str(panel.lines[hdd.name])
        assert "probing…" in row_of(app, hdd.name)
        gate.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert prober.probed == [hdd.name]
        assert "hdd" in row_of(app, hdd.name) and "yes" in row_of(app, hdd.name)  # measured beside the kernel flag
        assert "seek-bound, a hard disk" in str(panel.lines[hdd.name])


async def test_marked_disks_are_probed_one_after_another() -> None:
    inv = lab_inventory()
    names = [device(inv, s).name for s in ("HDD0001", "SSD0001")]
    prober = FakeProber()
    app = CachewiseApp(Core(FakeDiscovery(inv), prober=prober, live=False), watch_hotplug=False)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.workers.wait_for_complete()
        for name in names:
            await select(pilot, app, name)
            await pilot.press("space")
        await pilot.press("p")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert prober.probed == sorted(names)
        assert "ssd" in row_of(app, device(inv, "SSD0001").name)


async def test_busy_disk_asks_first_and_n_cancels() -> None:
    inv = lab_inventory()
    busy = device(inv, "LVM0001")
    prober = FakeProber()
    app = CachewiseApp(Core(FakeDiscovery(inv), prober=prober, live=False), watch_hotplug=False)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.workers.wait_for_complete()
        await select(pilot, app, busy.name)
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmProbe)
        assert "in use because LVM physical volume of VG labvg" in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, DisksScreen) and prober.probed == []
        await pilot.press("p")
        await pilot.pause()
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert prober.probed == [busy.name]


def test_probe_clock_never_reads_past_its_budget() -> None:
    from advisor.disks.probe import ProbeProgress
    from screens.probing import ProbePanel

    panel = ProbePanel()
    panel.progress(ProbeProgress("sdb", "seq", "sequential reads", 2.0, 4.5, 120.0))
    assert "2.0/4.5 s" in panel.lines["sdb"].plain
    panel.progress(ProbeProgress("sdb", "seq", "sequential reads", 5.6, 4.5, 120.0))
    assert "4.5 s, finishing" in panel.lines["sdb"].plain and "5.6" not in panel.lines["sdb"].plain


async def test_the_results_panel_closes_itself_and_the_results_stay_in_the_table(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Long enough to see the panel open on a loaded machine (CI's lab boots share its 2 cores),
    # short enough to wait for it to close.
    monkeypatch.setattr(DisksScreen, "PROBE_RESULTS_SECONDS", 2.0)
    inv = lab_inventory()
    hdd = device(inv, "HDD0001")
    app = CachewiseApp(Core(FakeDiscovery(inv), prober=FakeProber(), live=False), watch_hotplug=False)
    async with app.run_test(size=(180, 50)) as pilot:
        await app.workers.wait_for_complete()
        await select(pilot, app, hdd.name)
        await pilot.press("p")
        await app.workers.wait_for_complete()
        await pilot.pause()
        panel = app.screen.query_one(ProbePanel)
        assert panel.display and hdd.name in panel.lines
        for _ in range(100):  # it closes by itself after PROBE_RESULTS_SECONDS
            if not panel.display:
                break
            await pilot.pause(0.1)
        assert not panel.display and not panel.lines
        assert "hdd" in row_of(app, hdd.name)
