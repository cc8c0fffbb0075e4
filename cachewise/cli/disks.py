"""`cachewise scan`, `probe` and `history`: the disks, measured, and what was recorded."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from advisor.disks.probe import ProbeError, ProbeProgress
from advisor.errors import NOTHING
from advisor.history import History
from advisor.runner import CommandError
from advisor.units import rate
from cachewise.cli import common
from cachewise.cli.output import error, print_json, warn
from cachewise.cli.phrases import CLI, word
from cachewise.core import discover, measure
from cachewise.core.files import check_output
from cachewise.render import devices_table, probe_table

PROBE_SCHEMA = "cachewise.probe/1"


def cmd_scan(args: argparse.Namespace) -> int:
    if args.save_raw:
        check_output(args.save_raw, "nothing was scanned or written")
    core = common.core_for(args)
    inv = discover.scan_saving_raw(core, args.save_raw) if args.save_raw else discover.scan(core)
    if not args.no_record:
        warn(discover.record_inventory(core, inv))
    if args.json:
        data = discover.scan_json(inv, show_all=args.all)
        cachings = {d.name: d.caching for d in inv.devices}
        for item in data["devices"]:  # what can be done for a cache, with the commands that do it
            caching = cachings.get(item["name"])
            if caching is not None and item["caching"] is not None:
                item["caching"]["can"] = CLI.what_can_be_done(caching.can, caching.next)
        return print_json(data)
    console = Console()
    console.print(devices_table(inv, show_all=args.all))
    for note in inv.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    hidden = len(inv.devices) - len(inv.visible(False))
    if hidden and not args.all:
        console.print(f"[dim]{hidden} loop, zram or empty devices hidden; --all shows them.[/]")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    if not 0.5 <= args.seconds <= 60:
        return error(f"--seconds must be between 0.5 and 60 (got {args.seconds:g}); nothing was probed.")
    core = common.core_for(args)
    if core.runner.which("fio") is None:
        return error(
            "fio is not installed, so the probe cannot run; install the fio package "
            "(apt-get install fio). Nothing was probed."
        )
    targets, _ = measure.probe_targets(core, args.devices)
    busy = [d for d in targets if d.state == "in-use"]
    if busy and not args.yes:
        for d in busy:
            print(
                f"cachewise: {d.name} is {d.in_use_reason}; the probe adds about {args.seconds:g} s of read load.",
                file=sys.stderr,
            )
        if not sys.stdin.isatty():
            return error("pass --yes to probe busy disks anyway; nothing was probed.")
        if input("Probe anyway? [y/N] ").strip().lower() not in ("y", "yes"):
            return error(f"not probed. {NOTHING}")

    results = []
    failed = False
    show_progress = sys.stderr.isatty() and not args.json

    def progress(p: ProbeProgress) -> None:
        print(
            f"\r{p.device}: {p.description} ({p.elapsed:4.1f}/{p.total:g} s, {rate(p.iops)})   ",
            end="",
            file=sys.stderr,
            flush=True,
        )

    for dev in targets:
        try:
            result, warning = measure.probe(
                core, dev, args.seconds, progress if show_progress else None, not args.no_record
            )
        except (ProbeError, CommandError) as exc:
            if show_progress:
                print(file=sys.stderr)
            print(f"cachewise: {word(exc)}", file=sys.stderr)
            failed = True
            continue
        if show_progress:
            print(file=sys.stderr)
        results.append(result)
        failed |= not result.complete
        warn(warning)
    if args.json:
        print_json({"schema": PROBE_SCHEMA, "results": [r.to_json() for r in results]})
    elif results:
        console = Console()
        console.print(probe_table(results))
        for r in results:
            for line in (*r.classification.disagreements, *r.notes):
                console.print(f"[yellow]{r.device}:[/] {line}", highlight=False)
    return 1 if failed else 0


def cmd_history(args: argparse.Namespace) -> int:
    with History.open_default(args.state_dir) as hist:
        rows = hist.snapshots(args.limit)
        path = hist.path
    if args.json:
        return print_json({"database": str(path), "snapshots": [r.__dict__ for r in rows]})
    print(f"history database: {path}")
    for r in rows:
        print(f"#{r.id}  {r.taken_at}  {r.hostname}  {r.device_count} devices  udev {r.udev}")
    if not rows:
        print("no snapshots yet; `cachewise scan` records one.")
    return 0
