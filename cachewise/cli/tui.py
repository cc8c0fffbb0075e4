"""`cachewise` and `cachewise tui`: the terminal UI, on this machine or on a saved snapshot."""

from __future__ import annotations

import argparse
import sys

from cachewise.cli import common
from cachewise.cli.output import error
from cachewise.core import watch
from screens.app import CachewiseApp


def cmd_tui(args: argparse.Namespace) -> int:
    # Both ends must be the terminal: with stdin from a file or a pipe, Textual would wait for
    # keys that never come, at full speed.
    if sys.stdout is None or sys.stdin is None or not (sys.stdout.isatty() and sys.stdin.isatty()):
        return error(
            "the terminal UI needs a terminal for its input and its output; use a subcommand such as "
            "`cachewise scan --json` in scripts. Nothing was changed."
        )
    core = common.core_for(args)
    target = getattr(args, "watch", None)  # absent when `tui` was not named (the default command)
    ref = watch.target(core, target) if target else None
    CachewiseApp(core, watch_hotplug=core.live, watch=ref, start=True).run()
    return 0
