"""Walks on the host as a new user would, in a real terminal (tmux, its own server), each screen
the walk waited for kept in test-artifacts/host-walk/ (issue 30): `cachewise demo`'s two scenes,
and Plan only on a saved snapshot to a saved plan."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import LAB_SCAN

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (packaging/test.sh installs it)")

REPO = Path(__file__).resolve().parents[2]
ARTEFACTS = REPO / "test-artifacts" / "host-walk"


class Walk:
    """One program in a terminal of its own tmux server; ``save`` keeps the screen as NN-name.txt."""

    def __init__(self, name: str, command: list[str], cwd: Path, width: int, height: int) -> None:
        self.server = f"cw-walk-{uuid.uuid4().hex[:8]}"
        self.name, self.saved = name, 0
        # A moment first: the pane takes its size after the session starts, and a program that
        # reads the terminal's size at once would draw at tmux's default 80x24.
        shell = f"sleep 0.5; cd {shlex.quote(str(cwd))} && {shlex.join(command)}; echo CACHEWISE-EXIT=$?; sleep 30"
        self.tmux("new-session", "-d", "-s", "walk", "-x", str(width), "-y", str(height), shell)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.server, *args], capture_output=True, text=True, check=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "walk")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "walk", *keys)

    def wait_for(self, text: str, timeout: float = 20, save: str | None = None) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                if save:
                    self.save(save, screen)
                return screen
            time.sleep(0.1)
        self.save(f"timeout-{save or 'wait'}", self.screen())
        raise AssertionError(f"{text!r} did not appear within {timeout} s; screen:\n{self.screen()}")

    def save(self, what: str, screen: str) -> None:
        self.saved += 1
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        (ARTEFACTS / f"{self.name}-{self.saved:02d}-{what}.txt").write_text(screen)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.server, "kill-server"], check=False, capture_output=True)


@pytest.fixture
def walk(tmp_path: Path) -> Iterator[type[Walk]]:
    walks: list[Walk] = []

    class Started(Walk):
        def __init__(self, name: str, *args: str, width: int = 100, height: int = 30) -> None:
            for old in ARTEFACTS.glob(f"{name}-*.txt") if ARTEFACTS.exists() else ():
                old.unlink()  # the screens of this walk's last run
            command = [sys.executable, "-m", "cachewise", "--state-dir", str(tmp_path / "state"), *args]
            super().__init__(name, command, tmp_path, width, height)
            walks.append(self)

    yield Started
    for w in walks:
        w.close()


def test_demo_warmup_then_the_flush_scene(walk: type[Walk]) -> None:
    demo = walk("demo-warmup", "demo", "--speed", "4", width=100, height=30)
    demo.wait_for("played back", save="opened")
    demo.wait_for("predicted of reads 86.2%", save="prediction")
    screen = demo.wait_for("ends here", timeout=60, save="ended")
    assert "Warm-up" in screen and "Esc" in screen
    demo.keys("Escape")  # the disks as the lab guest had them, never this machine's
    screen = demo.wait_for("a recording played back", save="disks")
    assert "labvg" in screen and "Hit ratio" not in screen
    demo.keys("q")
    demo.wait_for("CACHEWISE-EXIT=0", timeout=10)

    flush = walk("demo-flush", "demo", "--scene", "flush", "--speed", "4", width=80, height=24)
    flush.wait_for("Flush stalled", timeout=60, save="stalled")
    flush.wait_for("left", timeout=60, save="countdown")
    flush.wait_for("still says dirty", timeout=60, save="clean")
    flush.keys("Escape")
    screen = flush.wait_for("a recording played back", save="disks")
    assert "bcache" in screen
    flush.keys("q")
    flush.wait_for("CACHEWISE-EXIT=0", timeout=10)
    assert len(list(ARTEFACTS.glob("demo-*.txt"))) == 8


def highlight(w: Walk, text: str, tries: int = 20) -> None:
    """Down until the step's 'Highlighted:' line names ``text``, as a user scanning the list."""
    for _ in range(tries):
        line = next((x for x in w.screen().splitlines() if x.startswith("Highlighted:")), "")
        if text in line:
            return
        w.keys("Down")
        time.sleep(0.3)
    raise AssertionError(f"could not highlight {text!r}:\n{w.screen()}")


def test_plan_only_on_a_snapshot_to_a_saved_plan(walk: type[Walk], tmp_path: Path) -> None:
    """A new user on a saved snapshot: Plan only, the LV and the SSD picked, a trace opened with
    path completion, the recommendation's alternative planned, saved, and the file is a plan."""
    shutil.copy(LAB_SCAN.parent / "traces" / "fio-v3.iolog", tmp_path / "data.iolog")
    w = walk("plan-only", "tui", "--from-raw", str(LAB_SCAN / "raw-udev.json"), width=100, height=30)
    w.wait_for("What would you like to do?", save="start")
    assert "saved snapshot" in w.screen()
    w.keys("Down", "Down", "Enter")
    w.wait_for("Plan only · step 1 of 5", save="slow")
    highlight(w, "labvg/data (")
    w.keys("Enter")
    w.wait_for("step 2 of 5", save="fast")
    highlight(w, "(nvme0n1)")
    w.keys("Enter")
    w.wait_for("step 3 of 5", save="workload")
    highlight(w, "Open a trace")
    w.keys("Enter")
    w.wait_for("Which trace?")
    w.keys("-l", "data.io")
    time.sleep(0.5)
    w.keys("Tab")  # completes data.iolog
    w.wait_for("data.iolog", save="trace-completed")
    w.keys("Enter")  # opens it, and the flow moves on by itself
    w.wait_for("step 4 of 5", timeout=60)
    # the recommendation is worked out in the background: its reasons show when it is ready
    w.wait_for("Measured from the trace", timeout=60, save="recommendation")
    w.keys("o")  # the recommendation says don't cache (the data fits on the SSD): take an alternative
    w.wait_for("Your choice instead", save="alternative")
    w.keys("a")
    w.wait_for("step 5 of 5", save="save")
    w.keys("C-u")  # the offered name goes; a name of the user's own
    time.sleep(0.5)
    w.keys("-l", "attach.json")
    w.wait_for("attach.json", save="named")
    w.keys("Enter")
    w.wait_for("Saved to attach.json", save="saved")
    # Once the notice has gone, the status line under the box says how to run it.
    w.wait_for("Saved to attach.json. Run it with: sudo cachewise apply attach.json", timeout=15, save="saved-line")
    plan = json.loads((tmp_path / "attach.json").read_text())
    assert plan["kind"] == "lvmcache-attach"
    w.keys("Escape")
    time.sleep(0.5)
    assert len(list(ARTEFACTS.glob("plan-only-*.txt"))) >= 8
