"""The `cachewise` command: the TUI with no arguments, headless subcommands otherwise.

Every subcommand takes ``--json`` so cachewise can be scripted across many hosts. Each one
parses its arguments (cachewise/cli/parser.py), calls the application core (cachewise/core/)
and renders the result; errors are worded by the CLI's phrasebook (cachewise/cli/phrases.py).
A command's module is loaded by name when it runs, so ``cachewise --version`` or ``scan`` never
loads numpy, numba or Textual.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys

from advisor.errors import CachewiseError
from cachewise.cli.output import OutputLost, error, guard_streams
from cachewise.cli.parser import build_parser
from cachewise.cli.phrases import word

# Each subcommand's function, as module:function under cachewise.cli.
COMMANDS = {
    "scan": "disks:cmd_scan",
    "probe": "disks:cmd_probe",
    "history": "disks:cmd_history",
    "trace": "workload:cmd_trace",
    "capture": "capture:cmd_capture",
    "analyze": "workload:cmd_analyze",
    "replay": "workload:cmd_replay",
    "recommend": "advice:cmd_recommend",
    "plan": "plans:cmd_plan",
    "apply": "plans:cmd_apply",
    "status": "caches:cmd_status",
    "watch": "caches:cmd_watch",
    "tunables": "tunables:cmd_tunables",
    "doctor": "health:cmd_doctor",
    "recheck": "recheck:cmd_recheck",
    "completion": "completion:cmd_completion",
    "tui": "tui:cmd_tui",
    "demo": "tui:cmd_demo",
}


def main(argv: list[str] | None = None) -> int:
    closed = guard_streams()
    if closed is not None:
        print(f"cachewise: {closed}, so nothing could be shown; nothing was done.", file=sys.stderr)
        return 1
    try:
        return _main(argv)
    except OutputLost as exc:
        _quiet_stdout()
        print(f"cachewise: cannot write to standard output ({exc.why}); what was shown is incomplete.", file=sys.stderr)
        return 1


def _quiet_stdout() -> None:
    """Standard output to /dev/null, so that Python's own flush at exit finds nothing to fail on."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(name)s: %(message)s",
        stream=sys.stderr,
    )
    # SIGTERM and SIGHUP stop a command as Ctrl-C does, through the same clean-up (the trace's
    # kernel instance is removed, fio is stopped; apply finishes the step in progress first).
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    module, _, function = COMMANDS[args.command or "tui"].partition(":")
    try:
        command = getattr(importlib.import_module(f"cachewise.cli.{module}"), function)
        return int(command(args))
    except CachewiseError as exc:
        return error(word(exc))
    except KeyboardInterrupt:
        print("cachewise: interrupted; nothing was changed.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `cachewise scan --json | head`: the reader left; say nothing more
        _quiet_stdout()
        return 141
    finally:
        try:
            sys.stdout.flush()  # here, where an error is answered, not at exit
        except BrokenPipeError:
            _quiet_stdout()


__all__ = ["build_parser", "main"]
