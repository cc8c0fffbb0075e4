"""The scan scheduler without a screen: one loop at a time, a newer request overtakes the full
scan in flight, a hot-plug event is shown at once by a quick pass and the full pass waits for
the events to settle."""

from __future__ import annotations

import threading
from collections.abc import Callable

from advisor.disks.collect import ScanInterrupted
from advisor.disks.devices import Inventory
from advisor.disks.scheduler import Pass, ScanScheduler


def inventory(tag: str) -> Inventory:
    return Inventory(taken_at=tag, hostname="h", udev="running", root=True, devices=())


class Scans:
    """A discovery whose full scans can be made to see a newer request while they run."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, set[str] | None]] = []
        self.during_full: Callable[[], None] | None = None

    def __call__(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        self.calls.append(("quick" if quick else "full", changed))
        if not quick and self.during_full is not None:
            hook, self.during_full = self.during_full, None
            hook()
            if should_stop is not None and should_stop():
                raise ScanInterrupted("")
        return inventory(f"{len(self.calls)}")


def test_a_request_starts_one_loop_and_a_full_scan_is_shown() -> None:
    scans, shown = Scans(), []
    scheduler = ScanScheduler(scans, lambda inv, s, done: shown.append(done))
    assert scheduler.request() is True
    assert scheduler.request() is False, "a loop is running: it takes the second request"
    scheduler.run()
    assert scans.calls == [("full", None)] and shown == ["full"]
    assert scheduler.request() is True, "the loop ended: the next request starts one"


def test_a_newer_request_overtakes_the_full_scan_in_flight() -> None:
    scans, shown = Scans(), []
    scheduler = ScanScheduler(scans, lambda inv, s, done: shown.append((done, inv.taken_at)))
    scheduler.request()
    scans.during_full = lambda: scheduler.request()  # a rescan is asked for while the first one runs
    scheduler.run()
    assert [c[0] for c in scans.calls] == ["full", "full"]
    assert shown == [("full", "2")], "the overtaken scan is not shown"


def test_a_hot_plug_event_is_shown_quickly_then_the_full_scan_waits_to_settle() -> None:
    scans, shown = Scans(), []
    passes: list[Pass] = []
    scheduler = ScanScheduler(scans, lambda inv, s, done: (shown.append(inv), passes.append(done)))
    scheduler.SETTLE_SECONDS = 0.2
    scheduler.request(quick_first=True, changed={"sdb"})
    scheduler.request(quick_first=True, changed={"sdc"})  # a second event before the loop runs
    done = threading.Event()
    thread = threading.Thread(target=lambda: (scheduler.run(), done.set()))
    thread.start()
    assert done.wait(5)
    assert scans.calls == [("quick", {"sdb", "sdc"}), ("full", None)] and passes == ["quick", "full"]
