"""`cachewise status` and `watch`: every cache on this machine, and one followed live."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from advisor.backends import listed
from advisor.units import UnitError, parse_duration
from advisor.watch.export import prometheus_text
from advisor.watch.sampler import Sample
from cachewise.cli import common
from cachewise.cli.output import error, print_json, print_tick, show, warn
from cachewise.cli.tunables import drift_lines
from cachewise.core import tunables, watch
from cachewise.render import status_table


def _prometheus(path: Path | None, samples: list[Sample]) -> None:
    if path is not None:
        common.write_prometheus(path, prometheus_text(samples))


def cmd_status(args: argparse.Namespace) -> int:
    common.check_export(args.prometheus)
    found = watch.status(common.core_for(args))
    drifted = tunables.drift(common.core_for(args))  # bcache tunables that are not what their files say
    rows = found.rows
    _prometheus(args.prometheus, [s for _, s in rows if s is not None])
    # What could not be read makes "no cache" unknowable: say so, and fail, so that nobody pulls
    # the SSD of a writeback cache that status could not see.
    unknown = "; ".join(found.unread)
    code = 1 if unknown else 0
    if args.json:
        print_json(
            {
                "schema": "cachewise.status/1",
                "unread": list(found.unread),
                "caches": [
                    {
                        "name": ref.name,
                        "kind": ref.kind,
                        "device": ref.device,
                        "slow_device": ref.origin,
                        "fast_device": ref.cache,
                        "hit_ratio": None if s is None else s.hit_ratio,
                        "sample": None if s is None else s.to_json(),
                    }
                    for ref, s in rows
                ],
                "tunables": [f.to_json() for f in drifted],
            }
        )
    elif rows:
        show(status_table(rows), wide=args.wide)
    elif not unknown:
        print(f"No {listed()} device on this machine.")
    if not args.json:
        for line in drift_lines(drifted):
            print(f"note: {line}")
    if unknown:
        listed_ = "the caches above are those it could read" if rows else "it cannot tell whether this machine has any"
        hint = " Run it with sudo." if os.geteuid() != 0 else ""
        error(f"could not read {unknown}, so {listed_}.{hint} Nothing was changed.")
    return code


def cmd_watch(args: argparse.Namespace) -> int:
    seconds = None
    if args.duration is not None:
        try:
            seconds = parse_duration(args.duration)
        except UnitError as exc:
            return error(f"--duration: {exc.what}; nothing was read.")
    common.check_export(args.prometheus)
    core = common.core_for(args)
    ref = watch.target(core, args.target)
    session = watch.session(core, [ref], record=not args.no_record, stall_seconds=args.stall_after)
    notes = sys.stderr if args.json_lines else sys.stdout
    code = 0
    try:
        for tick in session.follow(args.interval, args.count, seconds, args.until_clean):
            if tick.gone:  # uncached, detached, or the device went away
                print(f"{ref.name} is no longer a cache on this machine.", flush=True, file=notes)
                code = 0 if args.until_clean else 1
            print_tick(tick, args.json_lines, notes)
            for sample, _fig in tick.figures:
                _prometheus(args.prometheus, [sample])
    except KeyboardInterrupt:
        code = 130
    finally:
        warn(session.warning)  # a recording that failed is said even when watching stopped on an error
    return code
