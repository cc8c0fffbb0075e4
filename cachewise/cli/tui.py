"""`cachewise` and `cachewise tui`: the terminal UI, on this machine or on a saved snapshot."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from advisor.errors import NOTHING
from cachewise.cli import common
from cachewise.cli.output import error, print_tick
from cachewise.core import demo, load_snapshot, watch
from screens.app import CachewiseApp


def _terminal() -> bool:
    return sys.stdout is not None and sys.stdin is not None and sys.stdout.isatty() and sys.stdin.isatty()


def cmd_tui(args: argparse.Namespace) -> int:
    # A recording to play back is read first, so a bad file is said even without a terminal.
    samples: Path | None = getattr(args, "replay_samples", None)
    raw: Path | None = getattr(args, "from_raw", None)
    scene = demo.replay_samples(samples, load_snapshot(raw) if raw else None) if samples else None
    # Both ends must be the terminal: with stdin from a file or a pipe, Textual would wait for
    # keys that never come, at full speed.
    if not _terminal():
        return error(
            "the terminal UI needs a terminal for its input and its output; use a subcommand such as "
            f"`cachewise scan --json` in scripts. {NOTHING}"
        )
    named = getattr(args, "watch", None)  # absent when `tui` was not named (the default command)
    if scene is not None:
        shown = watch.target(scene.core, named) if named else scene.watch
        CachewiseApp(scene.core, watch_hotplug=False, watch=shown, watch_interval=scene.interval).run()
        return 0
    core = common.core_for(args)
    ref = watch.target(core, named) if named else None
    CachewiseApp(core, watch_hotplug=core.live, watch=ref, start=True).run()
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    if not (math.isfinite(args.speed) and 0.25 <= args.speed <= 20):
        return error(f"--speed must be between 0.25 and 20 (got {args.speed:g}). {NOTHING}")
    scene = demo.scene(args.scene)
    if args.json_lines or args.text:
        # The whole recording at once, as `watch` would have printed it live.
        session = watch.session(scene.core, [scene.watch], record=False)
        count = demo.length(scene.core, scene.watch)
        for tick in session.follow(0.0, count=count, until_clean=scene.until_clean):
            print_tick(tick, args.json_lines, sys.stderr if args.json_lines else sys.stdout)
        return 0
    if not _terminal():
        return error(
            "the demo needs a terminal for its input and its output; `cachewise demo --text` (or --json-lines) "
            f"prints it instead. {NOTHING}"
        )
    interval = scene.interval / args.speed
    CachewiseApp(scene.core, watch_hotplug=False, watch=scene.watch, watch_interval=interval).run()
    return 0
