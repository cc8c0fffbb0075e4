"""The one command runner: argv only, LC_ALL=C, stdin closed, timeouts, typed errors."""

from __future__ import annotations

import logging

import pytest

from advisor.runner import CommandFailed, CommandRunner, TimedOut, ToolMissing


def test_runs_argv_and_captures_output() -> None:
    result = CommandRunner().run(["printf", "%s|", "a b", "$HOME;rm"])
    assert result.stdout == "a b|$HOME;rm|"  # no shell: metacharacters stay literal
    assert result.returncode == 0


def test_refuses_shell_strings() -> None:
    with pytest.raises(TypeError):
        CommandRunner().run("ls -l")  # type: ignore[arg-type]


def test_locale_is_c_and_stdin_is_closed() -> None:
    runner = CommandRunner()
    env = dict(line.split("=", 1) for line in runner.run(["env"]).stdout.splitlines() if "=" in line)
    assert env["LC_ALL"] == "C"
    # cat would block forever on an open stdin; closed stdin means immediate EOF.
    assert runner.run(["cat"], timeout=5).stdout == ""


def test_missing_tool_names_the_package() -> None:
    with pytest.raises(ToolMissing) as err:
        CommandRunner().run(["make-bcache-does-not-exist"])
    assert "is not installed" in str(err.value)
    with pytest.raises(ToolMissing) as err2:
        CommandRunner(extra_env={}).run(["/nonexistent/fio", "--version"])
    assert "fio" in str(err2.value) and "apt-get install fio" in str(err2.value)


def test_failure_carries_exit_code_and_stderr() -> None:
    with pytest.raises(CommandFailed) as err:
        CommandRunner().run(["sh", "-c", "echo boom >&2; exit 3"])
    assert err.value.returncode == 3
    assert "boom" in str(err.value) and "exit code 3" in str(err.value)
    result = CommandRunner().run(["sh", "-c", "exit 4"], check=False)
    assert result.returncode == 4


def test_timeout_kills_and_says_so() -> None:
    with pytest.raises(TimedOut) as err:
        CommandRunner().run(["sleep", "10"], timeout=0.3)
    assert "did not finish within 0.3 s" in str(err.value)


def test_every_run_is_logged_with_argv_exit_and_stderr(caplog: pytest.LogCaptureFixture) -> None:
    runner = CommandRunner()
    with caplog.at_level(logging.INFO, logger="cachewise.runner"):
        runner.run(["sh", "-c", "echo warn >&2; exit 1"], check=False)
    assert "sh -c 'echo warn >&2; exit 1' -> exit 1" in caplog.text
    assert "stderr: warn" in caplog.text
    assert runner.history[-1].returncode == 1
