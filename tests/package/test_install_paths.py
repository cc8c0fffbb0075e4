"""The other ways in: `uv tool install` from a checkout, and the README's own commands run
verbatim in a clean clone, as a new user would paste them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.package.conftest import REPO


def _fenced_after(heading: str) -> str:
    """The first ```sh block under a README heading."""
    text = (REPO / "README.md").read_text()
    section = text.split(f"\n## {heading}\n", 1)[1]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, f"no sh block under {heading!r}"
    return match.group(1).strip()


def test_uv_tool_install_gives_a_working_command(tmp_path: Path) -> None:
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is None:
        pytest.fail("uv is missing: packaging/test.sh installs it with the test extra (pyproject.toml)")
    env = {**os.environ, "UV_TOOL_DIR": str(tmp_path / "tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
           "UV_PYTHON_DOWNLOADS": "never"}
    proc = subprocess.run([uv, "tool", "install", "--python", "python3", str(REPO)], env=env, check=False,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    command = tmp_path / "bin" / "cachewise"
    version = subprocess.run([command, "--version"], check=True, capture_output=True, text=True).stdout
    assert version.startswith("cachewise ")
    scan = subprocess.run([command, "scan", "--json", "--no-record"], check=True, capture_output=True, text=True)
    assert json.loads(scan.stdout)["schema"] == "cachewise.scan/1"


def test_readme_test_command_is_what_ci_runs() -> None:
    command = _fenced_after("Test")
    ci = [line for line in (REPO / ".ci/run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [command], (ci, command)


def test_readme_test_command_installs_and_checks_in_a_clean_clone(tmp_path: Path) -> None:
    """The README's test command, verbatim, in a fresh clone: its install steps, lint, types,
    the import contract and the collection of every tier (with pytest's --collect-only, since
    running the tiers again inside themselves would only repeat this run)."""
    if not (REPO / ".git").exists():
        pytest.fail("needs a git checkout")
    command = _fenced_after("Test")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "VIRTUAL_ENV"))}
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if not p.startswith(str(REPO)))
    proc = subprocess.run(["bash", "-c", f"{command} --collect-only -q"], cwd=clone, env=env, check=False,
                          capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    for stage in ("== ruff", "== mypy", "== import contract", "tests collected"):
        assert stage in proc.stdout, proc.stdout[-3000:]


def test_readme_install_and_run_command_starts_the_app_in_a_clean_clone(tmp_path: Path) -> None:
    """Pasted into a terminal in a fresh clone: it installs, the Disks screen appears, q quits."""
    if not (REPO / ".git").exists() or shutil.which("tmux") is None:
        pytest.fail("needs a git checkout and tmux (packaging/lab-packages.txt)")
    command = _fenced_after("Install and run")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    session = f"cwreadme-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "paste.sh"
    script.write_text(f"cd {clone}\n{command}\necho README-EXIT=$?\nsleep 60\n")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "35",
                    f"env TERM=xterm-256color bash {script}"], check=True)

    def wait(text: str, seconds: float) -> str:
        deadline = time.monotonic() + seconds
        while True:
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], check=False,
                                    capture_output=True, text=True).stdout
            if text in screen or time.monotonic() > deadline:
                return screen
            time.sleep(0.5)

    try:
        screen = wait("What would you like to do?", 600)  # the start screen, once installed
        assert "Add an SSD cache" in screen and "cachewise" in screen, screen
        subprocess.run(["tmux", "send-keys", "-t", session, "Escape"], check=True)  # to the Disks screen
        screen = wait("scanned in", 60)  # its status line, once the first scan is in
        assert "scanned in" in screen, screen
        time.sleep(2)
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        screen = wait("README-EXIT=", 30)
        assert "README-EXIT=0" in screen, screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False, capture_output=True)
    assert (clone / ".venv/bin/cachewise").exists()
