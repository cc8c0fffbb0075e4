"""Every command in README.md's ```sh blocks, run as it is written (issue 30).

Each command line is classified by what it needs:
- ``host``: it only reads (no sudo, no device, no LV): run here, verbatim, in a temporary folder
  with a temporary state directory, and it must exit 0 without a traceback;
- ``guest``: it needs root or the README's disks: the lab's recommend boot runs it verbatim
  (only ``sudo`` stripped: the guest runs as root) on disks named as the README names them
  (tests/vm/guest/recommend.sh, asserted by tests/lab/test_recommend_lab.py); here, every such
  command must appear in that script word for word;
- ``elsewhere``: the install, test, benchmark and accuracy commands, which other tiers run (or
  which take most of an hour): each is named with the test that runs it.

A command added to the README is classified by the same rules, so none is skipped silently:
the meta-test counts the README's command lines independently of the parser.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from advisor.workload import capfile
from advisor.workload.traces import load_trace, write_trace

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
GUEST_SCRIPT = REPO / "tests" / "vm" / "guest" / "recommend.sh"
FIXTURES = REPO / "tests" / "fixtures"

# Commands that other tiers run, with the file and the test (or the reason) that covers each.
ELSEWHERE: dict[str, tuple[str, str]] = {
    "bash packaging/install.sh && .venv/bin/cachewise": (
        "tests/package/test_install_paths.py", "def test_readme_install_and_run_command_starts_the_app_in_a_clean_clone"),
    "bash packaging/test.sh": ("tests/package/test_install_paths.py", "def test_readme_test_command_is_what_ci_runs"),
    "CACHEWISE_SOAK=1 bash packaging/test.sh": ("tests/vm/lab.py", 'os.environ.get("CACHEWISE_SOAK") == "1"'),
    # Benchmarks and the accuracy runs take 15 to 45 minutes each: no test tier runs them.
    "bash packaging/bench.sh": ("packaging/bench.sh", ""),
    "bash packaging/accuracy.sh": ("packaging/accuracy.sh", ""),
    "bash packaging/accuracy.sh --scale": ("packaging/accuracy.sh", "--scale"),
}

# The terminal UI's commands: run in tmux (a server of their own), and once the screen they open
# on shows, left as a user would: q from the start screen; Esc from the demo's Warm-up, then q.
TUI = re.compile(r"^cachewise( tui\b.*| demo\b(?!.*--(text|json-lines)).*)?$")
TUI_EXIT = {"demo": ("played back", ("Escape", "q"))}
TUI_START = ("What would you like to do?", ("q",))


def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)


def _cut_comment(line: str) -> str:
    """The line without its trailing `# comment` (a # after a space, outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def readme_commands(text: str | None = None) -> list[str]:
    """Every command line of the README's sh blocks, as written, without its comment."""
    commands = []
    for block in _sh_blocks(README.read_text() if text is None else text):
        for line in block.splitlines():
            command = _cut_comment(line).strip()
            if command:
                commands.append(command)
    return commands


def where(command: str) -> str:
    """host, guest or elsewhere (module docstring)."""
    if command in ELSEWHERE:
        return "elsewhere"
    if command.startswith("sudo ") or re.search(r"/dev/|\bvg0/|\bbcache\d", command):
        return "guest"
    if command.startswith("cachewise"):
        return "host"
    raise AssertionError(f"README command {command!r} is neither cachewise's nor in ELSEWHERE: classify it")


def guest_commands() -> list[str]:
    """The README's commands that only the lab guest can run, in the README's order."""
    return [c for c in readme_commands() if where(c) == "guest"]


def host_commands() -> list[str]:
    return [c for c in readme_commands() if where(c) == "host"]


# --- the meta-tests: nothing is skipped silently ---


def test_every_command_line_is_extracted_and_classified() -> None:
    text = README.read_text()
    # Counted apart from the parser: lines of sh blocks that start with neither a blank nor a #.
    lines = [line for block in _sh_blocks(text) for line in block.splitlines() if line[:1] not in ("", " ", "#")]
    commands = readme_commands()
    assert len(commands) == len(lines), (commands, lines)
    assert len(commands) >= 38, "the README's examples, install, test, benchmark and accuracy commands"
    classes = {c: where(c) for c in commands}
    counted = {k: sum(1 for v in classes.values() if v == k) for k in ("host", "guest", "elsewhere")}
    assert sum(counted.values()) == len(commands)
    assert counted["host"] >= 6 and counted["guest"] >= 25, counted
    assert set(ELSEWHERE) <= set(commands), "an ELSEWHERE entry no longer in the README"


def test_no_placeholder_is_left_in_a_command() -> None:
    for command in readme_commands():
        assert "..." not in command and "…" not in command, command
        assert not re.search(r"\b(FILE|DEV|TARGET|UUID|VG/LV|ID)\b", command), command


def test_the_story_is_one_machine() -> None:
    """The device traced is the one recommended for and planned for, and every file a command
    reads was written by an earlier command (or is the trace the story records)."""
    commands = readme_commands()
    traced = {m for c in commands for m in re.findall(r"cachewise trace (\S+)", c)}
    slow = {m for c in commands for m in re.findall(r"--slow (\S+)", c)}
    assert traced == slow == {"/dev/vg0/data"}
    written: set[str] = set()
    for c in commands:
        for read in re.findall(r"(?:--trace|--recommendation|--compare|analyze|replay|apply) (\S+\.(?:json|cwtrace))", c):
            assert read in written, f"{c!r} reads {read}, which no earlier example writes"
        written |= set(re.findall(r"(?:-o|>) (\S+\.(?:json|cwtrace|yml))", c))


@pytest.mark.parametrize("command", list(ELSEWHERE))
def test_commands_run_elsewhere_are_run_there(command: str) -> None:
    path, marker = ELSEWHERE[command]
    file = REPO / path
    assert file.exists(), path
    assert marker in file.read_text(), f"{path} no longer has {marker!r}"
    if path.endswith(".sh"):  # not run (they take most of an hour), but they parse
        subprocess.run(["bash", "-n", str(file)], check=True)


def test_every_guest_command_is_in_the_lab_scenario_word_for_word() -> None:
    script = GUEST_SCRIPT.read_text()
    missing = [c for c in guest_commands() if f"'{c}'" not in script]
    assert not missing, f"tests/vm/guest/recommend.sh does not run these README commands verbatim: {missing}"


# --- the host's commands, run as written ---


def week_of(folder: Path, requests: Any) -> None:
    """A capture folder of these requests, as the capture service writes it (one run, ended)."""
    folder.mkdir(mode=0o700)
    reqs = requests.copy()
    reqs["t"] += 1_790_000_000.0 - reqs["t"][0]
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        end = float(reqs["t"][-1]) + 1
        rec = capfile.Recorder(folder, fd, {"device": "dm-uuid:LVM-vg0data", "until": end}, 1.0,
                               capfile.Limits(end, 200 << 20), clock=lambda: end)
        rec.add(reqs)
        rec.close("interrupt")
    finally:
        os.close(fd)


@pytest.fixture
def reader(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A reader's folder (with the trace the README's `trace` example records) and environment:
    `cachewise` on the PATH, a private state directory, nothing else of this checkout."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    fio = load_trace(FIXTURES / "traces" / "fio-v3.iolog")
    write_trace(cwd / "data.cwtrace", fio.requests, {"device": "/dev/vg0/data", "tracer": "block_rq_issue"})
    week_of(cwd / "week", fio.requests)  # what `capture start --dir week` leaves
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "CACHEWISE"))},
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "CACHEWISE_STATE_DIR": str(tmp_path / "state"),
        "HOME": str(tmp_path / "home"),
        "TERM": "xterm-256color",
    }
    return cwd, env


def _in_tmux(command: str, cwd: Path, env: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    """Run a TUI command in tmux as a user would; once its first screen shows, leave it."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is missing (packaging/lab-packages.txt)")
    server = f"cwreadme-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", server]
    rc_file = tmp_path / "rc"
    script = tmp_path / "run.sh"
    script.write_text(f"cd {cwd}\n{command}\necho $? > {rc_file}\n")
    words = command.split()
    ready, keys = TUI_EXIT.get(words[1], TUI_START) if len(words) > 1 else TUI_START
    subprocess.run([*tmux, "new-session", "-d", "-s", "readme", "-x", "80", "-y", "24", f"bash {script}"],
                   check=True, env=env)
    screen = ""
    try:
        deadline = time.monotonic() + 120
        while ready not in screen and time.monotonic() < deadline:
            time.sleep(0.5)
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", "readme"], check=False,
                                    capture_output=True, text=True).stdout
        assert ready in screen, screen
        for key in keys:
            time.sleep(1)
            subprocess.run([*tmux, "send-keys", "-t", "readme", key], check=True)
        deadline = time.monotonic() + 30
        while not rc_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)
    assert rc_file.exists(), f"{command!r} did not quit on {' then '.join(keys)}:\n{screen}"
    return int(rc_file.read_text()), screen


@pytest.mark.parametrize("command", host_commands())
def test_host_command_runs_as_written(command: str, reader: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    cwd, env = reader
    if command.startswith("cachewise history "):
        # The history a reader has at this point: the scans the README ran before, each recorded.
        commands = readme_commands()
        for earlier in commands[: commands.index(command)]:
            if earlier.startswith("cachewise scan") and "--no-record" not in earlier:
                subprocess.run(["bash", "-c", earlier], cwd=cwd, env=env, capture_output=True, timeout=120, check=True)
    if TUI.match(command):
        rc, out = _in_tmux(command, cwd, env, tmp_path)
    else:
        proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300, check=False)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    assert rc == 0, f"{command!r} exited {rc}:\n{out[-3000:]}"
    assert "Traceback" not in out, out
    assert out.strip(), f"{command!r} printed nothing"
