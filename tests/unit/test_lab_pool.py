"""The lab pool's schedule (tests/vm/lab.py), with the boots replaced by short sleeps: while the
other tiers run (``early``) one paired guest at a time; after ``widen`` two; the guests that need
two vCPUs or an idle host only once every paired one has ended and the lab tier has begun."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.vm.lab import GuestRun, LabPool, Scenario


class Recorded(LabPool):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lock = threading.Lock()
        self.now: set[str] = set()
        self.seen: list[tuple[str, frozenset[str]]] = []  # (who started, who was running then)

    def _run_one(self, scenario: Scenario) -> None:
        with self.lock:
            self.seen.append((scenario.name, frozenset(self.now)))
            self.now.add(scenario.name)
        time.sleep(0.05)
        with self.lock:
            self.now.discard(scenario.name)
        self.futures[scenario.name].set_result(GuestRun(0, 0.05, Path("."), ""))


def scenarios() -> list[Scenario]:
    paired = [Scenario(f"p{i}", "x.sh", (), paired=True, expected_s=100 - i) for i in range(4)]
    return [*paired, Scenario("tui", "x.sh", (), expected_s=500), Scenario("timed", "x.sh", (), alone=True)]


def test_early_runs_one_paired_guest_at_a_time_and_nothing_else_until_widened() -> None:
    pool = Recorded(scenarios(), {}, parallel=2, early=True)
    pool.start()
    for name in ("p0", "p1", "p2", "p3"):
        pool.futures[name].result(timeout=10)
    time.sleep(0.2)
    assert not pool.futures["tui"].done() and not pool.futures["timed"].done(), "waits for the lab tier"
    assert all(not running for _, running in pool.seen), pool.seen  # never two at once
    assert [name for name, _ in pool.seen] == ["p0", "p1", "p2", "p3"]  # longest first
    pool.widen()
    pool.futures["timed"].result(timeout=10)
    assert [name for name, _ in pool.seen][-2:] == ["tui", "timed"]
    assert all(not running for name, running in pool.seen if name in ("tui", "timed"))


def test_widened_pairs_the_paired_guests() -> None:
    pool = Recorded(scenarios(), {}, parallel=2, early=False)
    pool.start()
    pool.futures["timed"].result(timeout=10)
    assert any(running for name, running in pool.seen if name.startswith("p")), "two paired guests at once"
    assert all(not running for name, running in pool.seen if name in ("tui", "timed"))


def test_a_guests_process_tree_is_killed_children_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session that ends early (-x, Ctrl-C) kills the guests still running, each with its
    children (vng's qemu), and starts no more. (The test's own set of guests: the session's real
    ones, started early beside the unit tier, are left alone.)"""
    import subprocess

    from tests.vm import lab

    monkeypatch.setattr(lab, "_GUESTS", set())
    monkeypatch.setattr(lab, "_CLOSED", False)
    # After its child dies the shell sleeps on as itself (exec), so it has not exited of its own
    # accord with status 0 when its turn to be killed comes (a bare `wait` let it: a CI flake).
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait; exec sleep 60"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    lab._GUESTS.add(proc)
    assert lab.kill_guests() == 1
    assert proc.wait(timeout=10) != 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and psutil.pid_exists(child) and psutil.Process(child).status() != "zombie":
        time.sleep(0.05)
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == "zombie", "the guest's child runs on"
    with pytest.raises(RuntimeError, match="no guest is started"):
        lab.Lab([], workdir=Path("/nonexistent")).run("x.sh")
