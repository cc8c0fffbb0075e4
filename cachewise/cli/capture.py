"""`cachewise capture start|show|export`: the capture service, by hand or from its unit."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from advisor.errors import CachewiseError, shown
from advisor.units import UnitError, parse_duration, parse_size, rate
from advisor.workload import capfile
from advisor.workload.capture import CaptureProgress
from cachewise.cli import common
from cachewise.cli.output import error, print_json
from cachewise.cli.phrases import word
from cachewise.core import capture
from cachewise.core.files import check_output, write_new

FINISHED = 4  # `capture start`: the folder's capture is finished, nothing was started (the unit's success)


def cmd_capture(args: argparse.Namespace) -> int:
    if args.capture_command == "start":
        return _start(args)
    if args.capture_command == "show":
        return _show(args)
    return _export(args)


def _start(args: argparse.Namespace) -> int:
    try:
        seconds = parse_duration(args.duration)
        budget = parse_size(args.budget)
    except UnitError as exc:
        return error(f"{exc.what}; nothing was captured.")
    showing = sys.stderr.isatty() and not args.json

    def progress(p: CaptureProgress) -> None:
        print(
            f"\r{p.events:,} requests ({rate(p.rate, '/s')}), {p.elapsed / 3600:,.1f} h; Ctrl-C stops   ",
            end="",
            file=sys.stderr,
            flush=True,
        )

    def started(devnode: str) -> None:  # for scripts and the journal: the requests from now on are captured
        print(f"cachewise: capturing {devnode}; Ctrl-C or SIGTERM stops", file=sys.stderr, flush=True)

    try:
        run = capture.capture(
            common.core_for(args),
            args.device,
            args.dir,
            seconds,
            budget,
            progress if showing else None,
            on_started=None if showing else started,
        )
    except CachewiseError as exc:
        if exc.code != "capture-finished":
            raise
        # Nothing left to do: its own status, which the service unit counts as success, so a
        # finished capture does not leave cachewise-capture@ failed after every boot. A script
        # asking for JSON gets it too (the sentence stays on stderr).
        error(word(exc))
        if args.json:
            facts = {k: str(exc.facts[k]) for k in ("folder", "device", "how") if k in exc.facts}
            print_json({"schema": "cachewise.capture-run/1", "finished": True, **facts})
        return FINISHED
    if showing:
        print(file=sys.stderr)
    if args.json:
        return print_json(run.to_json())
    how = "resumed" if run.resumed else "captured"
    print(
        f"{how} {run.events:,} requests of {run.device} in {run.seconds:,.0f} s, {run.sampled:,} kept at a sampling "
        f"rate of {run.sample_rate:.4g}, into {run.folder} ({len(run.files)} files); "
        f"it ended: {_ended(run.stopped_by)}. Next: cachewise analyze {run.folder}"
    )
    return 0


def _ended(why: str) -> str:
    return {
        "duration": "its time was up",
        "interrupt": "it was stopped (a signal or Ctrl-C); `cachewise capture start` resumes it",
        "request": "it was stopped",
        "budget": "its budget was spent",
        "disk-full": "the file system holding it was nearly full; free space, then start it again to resume",
    }.get(why, why)


def _show(args: argparse.Namespace) -> int:
    report = capture.report(args.path)
    data = report.to_json()
    if args.json:
        return print_json(data)
    span = ""
    if data["first"] is not None:
        first = time.strftime("%Y-%m-%d %H:%M", time.localtime(data["first"]))
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(data["last"]))
        span = f" from {first} to {last}"
    print(
        f"capture of {shown(data['device'])}{span}: {data['requests']:,} requests, {data['sampled_requests']:,} kept "
        f"(sampling rate {data['sample_rate']:.4g}), {len(data['files'])} files"
    )
    for h in data["hours"]:
        n = int(h.get("requests", 0))
        seq = int(h.get("sequential", 0)) / n if n else 0.0
        reads = int(h.get("reads", 0)) / n if n else 0.0
        lost = f"  lost {h.get('lost', 0):,}" if h.get("lost") else ""
        print(
            f"  {shown(h.get('hour', '?'))}  {n:>10,} requests  reads {reads:4.0%}  sequential {seq:4.0%}  "
            f"new footprint {int(h.get('new_footprint_bytes', 0)) / 2**20:,.0f} MiB{lost}"
        )
    for run in data["runs"]:
        print(f"  a run ended: {_ended(str(run.get('why')))}")
    for damage in data["damaged"]:
        print(f"  damaged: {damage}")
    return 0


def _export(args: argparse.Namespace) -> int:
    try:
        block = parse_size(args.block_size, minimum=512)
    except UnitError as exc:
        return error(f"--block-size: {exc.what}; nothing was written.")
    if block & (block - 1):
        return error(
            f"--block-size must be a power of two (512, 4k, 64k ...), not {block:,} bytes; nothing was written."
        )
    output: Path = args.output
    check_output(output, "nothing was written")
    c = capture.read(args.path)
    written: list[int] = []
    write_new(output, lambda f: written.append(capfile.export_oracle_general(c, f, block)), "nothing was written")
    n = written[0]
    summary = {
        "schema": "cachewise.capture-export/1",
        "output": str(output),
        "records": n,
        "block_size": block,
        "sample_rate": c.rate,
    }
    if args.json:
        return print_json(summary)
    print(
        f"{n:,} records written to {output} (oracleGeneral, {block:,}-byte blocks). The capture was sampled at "
        f"{c.rate:.4g}: a cache of S bytes is simulated by one of S x {c.rate:.4g} on this trace."
    )
    return 0
