"""`cachewise trace`, `analyze` and `replay`: the workload recorded, analysed and replayed."""

from __future__ import annotations

import argparse
import sys

from advisor.units import UnitError, parse_duration, parse_size, rate
from advisor.workload.capture import CaptureProgress
from advisor.workload.traces import MSR, CsvLayout
from cachewise.cli import common
from cachewise.cli.output import error, print_json, show, warn
from cachewise.core import workload
from cachewise.render import analysis_report, replay_table


def cmd_trace(args: argparse.Namespace) -> int:
    try:
        seconds = parse_duration(args.duration)
    except UnitError as exc:
        return error(f"{exc.what}; nothing was traced.")
    showing = sys.stderr.isatty() and not args.json

    def progress(p: CaptureProgress) -> None:
        lost = f", {p.lost:,} lost" if p.lost else ""
        print(
            f"\r{p.events:,} events ({rate(p.rate, '/s')}{lost}), "
            f"{p.elapsed:,.0f} of {seconds:,.0f} s; Ctrl-C stops   ",
            end="",
            file=sys.stderr,
            flush=True,
        )

    def started(devnode: str) -> None:  # for scripts: the requests from now on are in the trace
        print(f"cachewise: tracing {devnode}; Ctrl-C or SIGTERM stops", file=sys.stderr, flush=True)

    def blktrace(devnode: str) -> None:
        print(f"tracing {devnode} with blktrace for {seconds:,.0f} s…", file=sys.stderr)

    summary = workload.trace(
        common.core_for(args),
        args.device,
        args.output,
        seconds,
        args.tracer,
        progress if showing else None,
        blktrace if showing else None,
        None if showing else started,
    )
    if showing:
        print(file=sys.stderr)
    if args.json:
        return print_json(summary.to_json())
    lost = f"; {summary.lost:,} events were lost (the trace buffer overflowed)" if summary.lost else ""
    print(
        f"{summary.events:,} requests of {summary.device} in {summary.seconds:,.1f} s written to "
        f"{args.output}{lost}. Next: cachewise analyze {args.output}"
    )
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    core = common.core_for(args)
    try:
        block_size = parse_size(args.block_size)
        cutoff = parse_size(args.sequential_cutoff, minimum=0)
    except UnitError as exc:
        return error(f"{exc.what}; nothing was analysed.")
    layout = MSR
    if args.csv_columns:
        layout = CsvLayout.parse(args.csv_columns, args.csv_time_unit or "s", args.csv_header)
    elif args.csv_time_unit or args.csv_header:
        layout = CsvLayout(MSR.time, MSR.op, MSR.offset, MSR.size, args.csv_time_unit or MSR.time_unit, args.csv_header)
    request = workload.AnalyzeRequest(args.trace, block_size, args.mode, args.format, layout, cutoff)
    checksum = None if args.no_record else workload.start_checksum(core, args.trace)
    shown: list[str] = []  # the progress line on stderr, while one is shown

    def progress(what: str, share: float) -> None:
        line = f"analysing: {what}, {share:.0%}; Ctrl-C stops"
        print(f"\r{line:<{len(shown[0]) if shown else 0}}", end="", file=sys.stderr, flush=True)
        shown[:] = [line]

    try:
        result, meta = workload.analyze(core, request, progress if sys.stderr.isatty() and not args.json else None)
    finally:
        if shown:
            print(file=sys.stderr)
    if args.json:
        print_json(result.to_json())
    else:
        show(analysis_report(result))
    if not args.no_record:
        warn(workload.record_analysis(core, result, args.trace, meta, checksum))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    try:
        duration = parse_duration(args.duration) if args.duration is not None else None
    except UnitError as exc:
        return error(f"--duration: {exc.what}; nothing was replayed.")
    core = common.core_for(args)
    earlier = [workload.load_replay_result(path) for path in args.compare or []]
    showing = sys.stderr.isatty() and not args.json

    def progress(elapsed: float, expected: float | None) -> None:
        of = f" of about {expected:,.0f}" if expected else ""
        print(f"\rreplaying: {elapsed:,.0f}{of} s; Ctrl-C stops   ", end="", file=sys.stderr, flush=True)

    request = workload.ReplayRequest(
        args.trace,
        args.target,
        speed=args.speed,
        duration=duration,
        fmt=args.format,
        label=args.label,
        allow_writes=args.allow_writes,
        disposable=args.disposable,
    )
    try:
        result = workload.replay_trace(core, request, progress if showing else None)
    finally:
        if showing:
            print(file=sys.stderr)
    if args.json:
        return print_json(result.to_json())
    show(replay_table([*earlier, result]))
    for note in result.notes:
        print(f"note: {note}")
    return 0
