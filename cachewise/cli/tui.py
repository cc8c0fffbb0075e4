"""`cachewise` and `cachewise tui`: the terminal UI, on this machine or on a saved snapshot."""

from __future__ import annotations

import argparse
import sys

from cachewise.cli import common
from cachewise.cli.output import error
from cachewise.core import watch
from screens.app import CachewiseApp


def cmd_tui(args: argparse.Namespace) -> int:
    if not sys.stdout.isatty():
        return error("the terminal UI needs a terminal; use a subcommand such as `cachewise scan --json` in scripts.")
    core = common.core_for(args)
    target = getattr(args, "watch", None)  # absent when `tui` was not named (the default command)
    ref = watch.target(core, target) if target else None
    CachewiseApp(core, watch_hotplug=core.live, watch=ref, start=True).run()
    return 0
