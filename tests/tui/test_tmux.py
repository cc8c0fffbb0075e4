"""A person's view: the real `cachewise` in a real terminal (tmux), keys typed, screen read."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import LAB_SCAN

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (packaging/test.sh installs it)")


class Tmux:
    def __init__(self, command: list[str], width: int = 160, height: int = 40) -> None:
        self.name = f"cw-{uuid.uuid4().hex[:8]}"
        self.started = time.monotonic()
        shell = shlex.join(command) + "; echo CACHEWISE-EXIT=$?; sleep 30"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), shell], check=True)

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True, check=True).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, text: str, timeout: float = 10) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if text in self.screen():
                return time.monotonic() - self.started
            time.sleep(0.05)
        raise AssertionError(f"{text!r} did not appear within {timeout} s; screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False, capture_output=True)


@pytest.fixture
def tmux_app(tmp_path: Path) -> Iterator[type[Tmux]]:
    sessions: list[Tmux] = []

    class Session(Tmux):
        def __init__(self, *args: str) -> None:
            super().__init__([sys.executable, "-m", "cachewise", "--state-dir", str(tmp_path), *args])
            sessions.append(self)

    yield Session
    for s in sessions:
        s.close()


def detail_line(screen: str) -> str:
    """The detail pane's first line: 'Device   NAME (kind)'."""
    match = re.search(r"Device\s{2,}(\S+ \(\w+\))", screen)
    if match is None:
        raise AssertionError(f"no detail pane on screen:\n{screen}")
    return match.group(1)


def test_start_screen_then_disks_on_this_machine_within_two_seconds_and_q_exits(tmux_app: type[Tmux]) -> None:
    app = tmux_app()
    seconds = app.wait_for("What would you like to do?", timeout=10)
    print(f"start screen after {seconds:.2f} s")
    assert "Add an SSD cache" in app.screen() and "Remove a cache" in app.screen()
    app.keys("Escape")  # Browse the disks: scanned meanwhile, underneath
    seconds = app.wait_for("scanned in", timeout=10)
    print(f"Disks screen with devices after {seconds:.2f} s")
    assert seconds <= 2.0
    screen = app.screen()
    assert "Device" in screen and "Quit" in screen
    app.keys("q")
    app.wait_for("CACHEWISE-EXIT=0", timeout=5)


def detail_once(app: Tmux, ok: Callable[[str], bool], timeout: float = 3.0) -> str:
    """The detail line as soon as it satisfies ``ok`` (the screen redraws asynchronously)."""
    deadline = time.monotonic() + timeout
    line = detail_line(app.screen())
    while not ok(line) and time.monotonic() < deadline:
        time.sleep(0.05)
        line = detail_line(app.screen())
    return line


def test_arrows_move_selection_and_update_detail(tmux_app: type[Tmux]) -> None:
    app = tmux_app("tui", "--from-raw", str(LAB_SCAN / "raw-udev.json"))
    app.wait_for("What would you like to do?")
    app.keys("Escape")
    app.wait_for("scanned in")
    first = detail_line(app.screen())
    app.keys("Down")
    second = detail_once(app, lambda line: line != first)
    assert second != first
    app.keys("Down")
    third = detail_once(app, lambda line: line not in (first, second))
    assert third not in (first, second)
    app.keys("Up")
    assert detail_once(app, lambda line: line == second) == second
    app.keys("q")
    app.wait_for("CACHEWISE-EXIT=0", timeout=5)
