"""`cachewise scan`, `probe` and `history`: the disks, measured, and what was recorded (each
snapshot, one shown as scan shows it, and what changed between two)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from rich.table import Table
from rich.text import Text

from advisor.disks.changes import DeviceChange, diff, inventory_from_json, same_devices
from advisor.disks.devices import Inventory
from advisor.disks.probe import ProbeError, ProbeProgress
from advisor.errors import NOTHING, CachewiseError, codes
from advisor.history import History
from advisor.runner import CommandError
from advisor.units import human_size, rate
from cachewise.cli import common
from cachewise.cli.output import console as console_for
from cachewise.cli.output import error, print_json, warn
from cachewise.cli.phrases import CLI, word
from cachewise.cli.tunables import drift_lines
from cachewise.core import discover, measure, tunables
from cachewise.core.files import check_output
from cachewise.render import devices_table, probe_table

PROBE_SCHEMA = "cachewise.probe/1"
DIFF_SCHEMA = "cachewise.history-diff/1"

codes(
    {
        "bad-snapshot-id": "{id!r} is not a snapshot number such as 12 or #12; `cachewise history` lists them",
        "no-such-snapshot": "there is no snapshot #{id} in {database} ({have}); `cachewise history` lists them",
        "unreadable-snapshot": "snapshot #{id} in {database} is not one this version of cachewise can read",
    },
    front_end=True,
)


def cmd_scan(args: argparse.Namespace) -> int:
    if args.save_raw:
        check_output(args.save_raw, "nothing was scanned or written")
    core = common.core_for(args)
    inv = discover.scan_saving_raw(core, args.save_raw) if args.save_raw else discover.scan(core)
    if not args.no_record:
        warn(discover.record_inventory(core, inv))
    drifted = tunables.drift(core)  # bcache tunables that are not what their files say
    if args.json:
        data = discover.scan_json(inv, show_all=args.all)
        cachings = {d.name: d.caching for d in inv.devices}
        for item in data["devices"]:  # what can be done for a cache, with the commands that do it
            caching = cachings.get(item["name"])
            if caching is not None and item["caching"] is not None:
                item["caching"]["can"] = CLI.what_can_be_done(caching.can, caching.next)
        data["tunables"] = [f.to_json() for f in drifted]
        return print_json(data)
    _print_devices(inv, args.all, args.wide)
    for line in drift_lines(drifted):
        console_for(args.wide).print(Text.assemble(("note:", "yellow"), f" {line}"), highlight=False)
    return 0


def _print_devices(inv: Inventory, show_all: bool, wide: bool, title: str = "") -> None:
    """The devices table (scan, history show), its notes, and how many devices it left out."""
    console = console_for(wide)
    if title:
        console.print(title, highlight=False)
    console.print(devices_table(inv, show_all=show_all), crop=False)
    for note in inv.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    hidden = len(inv.devices) - len(inv.visible(False))
    if hidden and not show_all:
        console.print(f"[dim]{hidden} loop, zram or empty devices hidden; --all shows them.[/]")


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
        console = console_for(args.wide)
        console.print(probe_table(results))
        for r in results:
            for line in (*r.classification.disagreements, *r.notes):
                console.print(f"[yellow]{r.device}:[/] {line}", highlight=False)
    return 1 if failed else 0


def cmd_history(args: argparse.Namespace) -> int:
    if args.history_command == "show":
        return _history_show(args)
    if args.history_command == "diff":
        return _history_diff(args)
    with History.open_default(args.state_dir) as hist:
        rows = hist.snapshots(args.limit + 1)  # one more: whether the oldest listed repeats the one before it
        data = {r.id: hist.snapshot_json(r.id) for r in rows}
        path = hist.path
    # Oldest first: a snapshot with the same devices as the one before it repeats that one's first.
    same_as: dict[int, int | None] = {}
    for older, newer in zip([None, *reversed(rows)], reversed(rows), strict=False):
        repeats = older is not None and same_devices(data[older.id], data[newer.id])
        same_as[newer.id] = (same_as[older.id] or older.id) if repeats and older is not None else None
    oldest_known = rows[-1].id if rows else None  # the first recorded, when all were fetched: nothing before it
    first_recorded = len(rows) <= args.limit
    rows = rows[: args.limit]
    if args.json:
        snapshots = [{**r.__dict__, "same_as": same_as[r.id]} for r in rows]
        return print_json({"database": str(path), "snapshots": snapshots})
    print(f"history database: {path}")
    if not rows:
        print("no snapshots yet; `cachewise scan` records one.")
        return 0
    table = Table(title_justify="left")
    for column in ("#", "taken at", "host", "devices", "udev", "same as"):
        table.add_column(column, no_wrap=True, justify="right" if column in ("#", "devices") else "left")
    for r in rows:
        repeat = same_as[r.id]
        table.add_row(
            str(r.id),
            r.taken_at,
            r.hostname,
            str(r.device_count),
            r.udev,
            Text(f"same as #{repeat}", style="dim")
            if repeat
            else Text("" if first_recorded and r.id == oldest_known else "changed"),
        )
    console_for(args.wide).print(table, crop=False)
    print("`cachewise history show ID` shows one; `cachewise history diff ID [ID2]` what changed.")
    return 0


def _snapshot_id(text: str) -> int:
    match = re.fullmatch(r"\s*#?(\d{1,18})\s*", text)
    if match is None:
        raise CachewiseError("bad-snapshot-id", id=text)
    return int(match.group(1))


def _snapshot(hist: History, text: str) -> tuple[int, dict[str, Any]]:
    """The recorded snapshot a number names, with its JSON; refused in one sentence when none."""
    snapshot_id = _snapshot_id(text)
    data = hist.snapshot_json(snapshot_id)
    if data is not None:
        return snapshot_id, data
    if hist.has_snapshot(snapshot_id):
        raise CachewiseError("unreadable-snapshot", id=snapshot_id, database=hist.path)
    newest = hist.snapshots(1)
    have = f"the newest is #{newest[0].id}" if newest else "it has none yet"
    raise CachewiseError("no-such-snapshot", id=snapshot_id, database=hist.path, have=have)


def _history_show(args: argparse.Namespace) -> int:
    with History.open_default(args.state_dir) as hist:
        snapshot_id, data = _snapshot(hist, args.id)
    inv = inventory_from_json(data)
    if args.json:
        return print_json({**inv.to_json(show_all=args.all), "snapshot_id": snapshot_id})
    _print_devices(inv, args.all, args.wide, title=f"Snapshot #{snapshot_id}, taken {inv.taken_at}")
    return 0


def _field(name: str, value: Any) -> str:
    if value is None or value == "":
        return "none"
    return human_size(value) if name == "size_bytes" and isinstance(value, int) else str(value)


FIELD_WORDS = {"name": "name", "size_bytes": "size", "state": "state", "role": "role", "caching": "caching"}
WHAT_MARKS = {"added": "+", "removed": "-", "changed": "~"}


def _change_lines(change: DeviceChange) -> list[str]:
    """A change as lines: what and the kernel name, the stable path alone on its line (whole, to
    copy), then each field that changed."""
    lines = [f"{WHAT_MARKS[change.what]} {change.what} {change.name}"]
    if change.stable_path:
        lines.append(f"    {change.stable_path}")
    lines += [
        f"    {FIELD_WORDS[c.field]}: {_field(c.field, c.before)} -> {_field(c.field, c.after)}" for c in change.changes
    ]
    return lines


def _history_diff(args: argparse.Namespace) -> int:
    with History.open_default(args.state_dir) as hist:
        first, before = _snapshot(hist, args.id)
        if args.id2 is not None:
            second, after = _snapshot(hist, args.id2)
        else:
            second, after = _snapshot(hist, str(hist.snapshots(1)[0].id))
    old, new = inventory_from_json(before), inventory_from_json(after)
    changes = diff(old, new)
    if args.json:
        return print_json(
            {
                "schema": DIFF_SCHEMA,
                "from": {"id": first, "taken_at": old.taken_at, "hostname": old.hostname},
                "to": {"id": second, "taken_at": new.taken_at, "hostname": new.hostname},
                "changes": [c.to_json() for c in changes],
            }
        )
    print(f"#{first} ({old.taken_at}, {old.hostname}) -> #{second} ({new.taken_at}, {new.hostname})")
    if not changes:
        print("no change: the same devices, with the same names, sizes, states, roles and caches.")
    for change in changes:
        print("\n".join(_change_lines(change)))
    return 0
