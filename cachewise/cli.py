"""The `cachewise` command: the TUI with no arguments, headless subcommands otherwise.

Every subcommand takes ``--json`` so cachewise can be scripted across many hosts.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.disks.collect import RawSystem, collect
from advisor.disks.discovery import build_inventory
from advisor.disks.probe import (
    DEFAULT_SECONDS,
    ProbeError,
    ProbeProgress,
    ProbeResult,
    check_target,
    probe_device,
)
from advisor.history import STATE_ENV, History, HistoryError, default_state_dir
from advisor.runner import CommandError, CommandRunner
from cachewise import __version__

if TYPE_CHECKING:
    from recipes.lvmcache import CacheSpec

WORKLOAD_TYPES = ("very-small-files", "database", "database-fsync", "mixed-files", "large-files",
                  "very-large-datasets")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cachewise",
        description="Advice and guided recipes for SSD caches (lvmcache, bcache) in front of hard disks. "
        "With no subcommand, opens the terminal UI.",
    )
    parser.add_argument("--version", action="version", version=f"cachewise {__version__}")
    parser.add_argument(
        "--state-dir",
        type=Path,
        help=f"where the history database lives (default: ${STATE_ENV}, else "
        "$XDG_STATE_HOME/cachewise, or /var/lib/cachewise for root)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every command run to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    scan = sub.add_parser("scan", help="list disks, partitions, LVM, bcache and other block devices",
                          description="Discover block devices with their stable identity, transport, size and what uses them.")
    scan.add_argument("--json", action="store_true", help="print JSON (schema cachewise.scan/1, see docs/scan-json.md)")
    scan.add_argument("--all", action="store_true", help="include loop, zram and empty devices")
    scan.add_argument("--no-record", action="store_true", help="do not record this scan in the history database")
    scan.add_argument("--save-raw", type=Path, metavar="FILE", help="also write the raw udev/sysfs facts to FILE (for bug reports and test fixtures)")
    scan.add_argument("--from-raw", type=Path, metavar="FILE", help="build the report from a raw snapshot saved with --save-raw instead of this machine")

    probe = sub.add_parser(
        "probe", help="measure disks with short read-only fio probes and classify them",
        description="Measure each DEVICE with a short read-only fio probe (random 4 KiB reads at queue depth 1 and 32, "
        "sequential 1 MiB reads across the disk) and classify it as hdd, ssd or nvme by measured latency. "
        "Probes never write. Needs root and fio.")
    probe.add_argument("devices", nargs="+", metavar="DEVICE", help="a disk, e.g. /dev/sdb or a /dev/disk/by-id/ path")
    probe.add_argument("--json", action="store_true", help="print JSON (schema cachewise.probe/1)")
    probe.add_argument("--seconds", type=float, default=DEFAULT_SECONDS, help=f"time budget per device (default {DEFAULT_SECONDS:g}, at most 60)")
    probe.add_argument("--yes", action="store_true", help="probe mounted or busy disks without asking (the probe adds read load)")
    probe.add_argument("--no-record", action="store_true", help="do not record the results in the history database")

    trace = sub.add_parser(
        "trace", help="record a device's block I/O to a trace file (root)",
        description="Record the block I/O of a disk, partition, LV or other device-mapper device through the "
        "kernel's block tracepoints (tracefs; nothing to install). Streams to FILE with bounded memory; stops "
        "after --duration or on Ctrl-C. Analyse the result with `cachewise analyze FILE`.")
    trace.add_argument("device", metavar="DEVICE")
    trace.add_argument("--duration", default="10m", help="how long: 90s, 10m (default), 2h")
    trace.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="the trace file to write (must not exist)")
    trace.add_argument("--json", action="store_true", help="print a JSON summary (schema cachewise.trace/1)")
    trace.add_argument("--tracer", default="auto", choices=["auto", "tracefs", "blktrace"],
                       help="tracefs tracepoints (default), or blktrace and blkparse where tracefs cannot be used")

    analyze = sub.add_parser(
        "analyze", help="analyse a block trace: miss-ratio curve, hot-data ratio, mix",
        description="Analyse a block I/O trace (a cachewise trace, a fio iolog v2/v3, blkparse text, or CSV): "
        "footprint, read/write mix, sequential share, request sizes, the exact LRU miss-ratio curve from 0.1%% to "
        "100%% of the footprint, the hot-data ratio and a Zipf exponent.")
    analyze.add_argument("trace", type=Path, metavar="TRACE")
    analyze.add_argument("--json", action="store_true", help="print JSON (schema cachewise.analysis/1)")
    analyze.add_argument("--block-size", default="4k", help="cache block size: 4k (default), 32k ... 1g (dm-cache chunks)")
    analyze.add_argument("--mode", default="auto", choices=["auto", "exact", "shards"],
                         help="curve by exact stack distances, or by SHARDS sampling (default: exact up to 12 million "
                         "block accesses, SHARDS beyond)")
    analyze.add_argument("--format", default="auto", choices=["auto", "cachewise", "fio", "blkparse", "csv"],
                         help="trace format (default: detected)")
    analyze.add_argument("--csv-columns", default=None, metavar="SPEC",
                         help="CSV columns, e.g. time=0,op=3,offset=4,size=5 (default: the MSR Cambridge layout)")
    analyze.add_argument("--csv-time-unit", default=None, choices=["s", "ms", "us", "ns", "filetime"],
                         help="unit of the CSV time column (default: filetime for MSR, else s)")
    analyze.add_argument("--csv-header", action="store_true", help="the CSV's first line is a header")
    analyze.add_argument("--no-record", action="store_true", help="do not record the analysis in the history database")

    rec = sub.add_parser(
        "recommend", help="recommend a cache: backend, size, mode and tunables, with reasons",
        description="Recommend how to cache the slow device with the fast one(s): lvmcache, lvmcache writecache, "
        "bcache, or no cache; the cache size from the workload's miss-ratio curve; writethrough or writeback; chunk, "
        "metadata and bcache tunables; predicted hit ratio and warm-up. Every reason cites a published finding. "
        "Uses the newest probes from the history database (`cachewise probe`). Changes nothing.")
    rec.add_argument("--slow", required=True, metavar="DEV", help="the slow device or LV that holds the data")
    rec.add_argument("--fast", required=True, action="append", metavar="DEV",
                     help="a fast device (SSD) for the cache; twice for a mirrored pair")
    src = rec.add_mutually_exclusive_group()
    src.add_argument("--trace", type=Path, metavar="FILE", help="a trace of the slow device's workload (`cachewise trace`)")
    src.add_argument("--workload", choices=list(WORKLOAD_TYPES), help="declare the workload when there is no trace")
    rec.add_argument("--hot-fraction", type=float, metavar="F",
                     help="declared: the share of the data that serves 90%% of the I/O (0.1 for fio's zipf:1.2)")
    rec.add_argument("--read-share", type=float, metavar="F", help="declared: the share of I/O that is reads")
    rec.add_argument("--fs", choices=["ext4", "xfs", "other"], help="the file system (default: detected on --slow)")
    rec.add_argument("--data-size", metavar="SIZE", help="the dataset's size, e.g. 48g (default: the slow device's size)")
    rec.add_argument("--cache-size", metavar="SIZE", help="at most this much SSD space for the cache")
    rec.add_argument("--mirrored", action="store_true", help="the fast devices are (or will be) mirrored")
    rec.add_argument("--accept-writeback-risk", action="store_true",
                     help="allow writeback on a single SSD: dirty data is lost if it fails")
    rec.add_argument("--reformat-ok", action="store_true", help="the slow device's data may be moved off and back (bcache)")
    rec.add_argument("--read-iops", type=float, metavar="N", help="declared read rate, for a warm-up time without a trace")
    rec.add_argument("--kernel", metavar="VERSION", help="plan for this kernel instead of the running one")
    rec.add_argument("--from-raw", type=Path, metavar="FILE", help="plan from a raw snapshot saved with `scan --save-raw`")
    rec.add_argument("--json", action="store_true", help="print JSON (schema cachewise.recommend/1)")

    plan = sub.add_parser(
        "plan", help="make a plan (a dry run): the exact commands to attach or remove a cache",
        description="Build a plan and print it: the exact commands, the layout before and after, what will be "
        "destroyed, the space used and the expected time. Nothing runs; `cachewise apply PLAN` runs a plan "
        "saved with -o.")
    plan_sub = plan.add_subparsers(dest="recipe", metavar="RECIPE", required=True)
    attach = plan_sub.add_parser("lvmcache-attach", help="attach an lvmcache to an LV in place",
                                 description="Attach a cache pool on an SSD to an existing LV: pvcreate, vgextend, "
                                 "lvcreate (data and metadata), lvconvert --type cache-pool, lvconvert --type cache.")
    attach.add_argument("--lv", required=True, help="the LV to cache, as VG/LV")
    attach.add_argument("--ssd", required=True, metavar="DEV", help="the SSD (a whole disk, or a PV of the same VG)")
    attach.add_argument("--size", metavar="SIZE", help="cache size, e.g. 40g (or take it from --recommendation)")
    attach.add_argument("--recommendation", type=Path, metavar="FILE",
                        help="a `cachewise recommend --json` output: size, chunk, metadata, mode and policy")
    attach.add_argument("--mode", choices=["writethrough", "writeback"], help="cache mode (default writethrough)")
    attach.add_argument("--chunk", metavar="SIZE", help="chunk size, a multiple of 32k (default: lvm2's rule)")
    attach.add_argument("--metadata", metavar="SIZE", help="metadata size (default: lvm2's rule)")
    attach.add_argument("--wipe", action="store_true", help="the SSD holds data that may be destroyed")
    attach.add_argument("--allow-partition", action="store_true", help="use a partition of the SSD, not the whole disk")
    uncache = plan_sub.add_parser("lvmcache-uncache", help="remove an lvmcache (dirty blocks are flushed first)",
                                  description="Flush and remove the cache of an LV (lvconvert --uncache), or keep the "
                                  "cache pool as an LV (--keep-pool, lvconvert --splitcache).")
    uncache.add_argument("--lv", required=True, help="the cached LV, as VG/LV")
    uncache.add_argument("--keep-pool", action="store_true", help="split the cache off but keep the cache pool LV")
    uncache.add_argument("--release-ssd", metavar="DEV", help="then take this SSD out of the VG and remove its label")
    new = plan_sub.add_parser("lvmcache-new", help="a new cached LV on an empty HDD and SSD",
                              description="Make both disks PVs of a new VG, an LV on all of the HDD, and attach a "
                              "cache pool on the SSD.")
    new.add_argument("--hdd", required=True, metavar="DEV")
    new.add_argument("--ssd", required=True, metavar="DEV")
    new.add_argument("--vg", required=True)
    new.add_argument("--lv", required=True)
    new.add_argument("--size", required=True, metavar="SIZE", help="cache size")
    new.add_argument("--mode", choices=["writethrough", "writeback"], default="writethrough")
    new.add_argument("--wipe", action="store_true", help="the disks hold data that may be destroyed")
    cmode = plan_sub.add_parser("lvmcache-mode", help="switch an lvmcache between writethrough and writeback",
                                description="Switch a cached LV's mode with lvchange --cachemode; leaving writeback, "
                                "lvm2 writes the dirty blocks back first.")
    cmode.add_argument("--lv", required=True, help="the cached LV, as VG/LV")
    cmode.add_argument("--mode", required=True, choices=["writethrough", "writeback"])
    bcreate = plan_sub.add_parser("bcache-create", help="make a bcache device on empty disks",
                                  description="Format an empty HDD as bcache backing and an empty SSD as its cache "
                                  "(make-bcache), register and attach them, set cache_mode, sequential_cutoff and "
                                  "writeback_percent. Refuses a backing device that holds data (use lvmcache).")
    bcreate.add_argument("--backing", required=True, metavar="DEV", help="the slow device (empty)")
    bcreate.add_argument("--cache", required=True, metavar="DEV", help="the SSD (empty)")
    bcreate.add_argument("--mode", choices=["writethrough", "writeback"], default="writethrough")
    bcreate.add_argument("--sequential-cutoff", default="4m", metavar="SIZE", help="default 4m (T-SEQ-1)")
    bcreate.add_argument("--writeback-percent", type=int, default=10, metavar="N", help="default 10")
    bcreate.add_argument("--wipe", action="store_true", help="the devices hold data that may be destroyed")
    bdetach = plan_sub.add_parser("bcache-detach", help="detach a bcache cache safely (flush first)",
                                  description="Switch to writethrough, write back every dirty block, wait for state "
                                  "clean, detach, wait for 'no cache', stop the cache set.")
    bdetach.add_argument("--device", required=True, metavar="DEV", help="the bcache device or its backing device")
    bdetach.add_argument("--wipe-cache", action="store_true", help="then erase the cache device's bcache superblock")
    for p in (attach, uncache, new, cmode, bcreate, bdetach):
        p.add_argument("-o", "--output", type=Path, metavar="FILE", help="save the plan (JSON) for `cachewise apply`")
        p.add_argument("--json", action="store_true", help="print the plan as JSON (schema cachewise.plan/1)")
        p.add_argument("--format", choices=["text", "json", "ansible"], default="text",
                       help="text preview (default), JSON, or an Ansible playbook with the same steps and checks "
                       "(with -o, the file is the playbook)")
        p.add_argument("--dry-run", action="store_true", help="only preview (what plan always does; for clarity)")
        p.add_argument("--from-raw", type=Path, metavar="FILE", help="plan against a raw snapshot (`scan --save-raw`)")

    apply_p = sub.add_parser(
        "apply", help="run a saved plan, journaled; or resume or roll back an interrupted one",
        description="Run a plan saved with `cachewise plan ... -o FILE`. The devices must be the ones the plan was "
        "made for. Each step is journaled, so an interrupted run can be resumed (--resume) or undone (--rollback).")
    apply_p.add_argument("plan", nargs="?", type=Path, metavar="PLAN")
    apply_p.add_argument("--yes", action="store_true", help="do not ask (needed without a terminal)")
    what = apply_p.add_mutually_exclusive_group()
    what.add_argument("--resume", action="store_true", help="finish the interrupted plan")
    what.add_argument("--rollback", action="store_true", help="undo the steps of the interrupted plan")
    apply_p.add_argument("--json", action="store_true", help="print the outcome as JSON")

    hist = sub.add_parser("history", help="list recorded discovery snapshots",
                          description="List the discovery snapshots recorded in the history database.")
    hist.add_argument("--json", action="store_true", help="print JSON")
    hist.add_argument("--limit", type=int, default=20, help="how many snapshots (default 20)")

    tui = sub.add_parser("tui", help="open the terminal UI (the default)", description="Open the terminal UI.")
    tui.add_argument("--from-raw", type=Path, metavar="FILE", help="show a raw snapshot saved with `scan --save-raw` instead of this machine")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        if args.command == "scan":
            return cmd_scan(args)
        if args.command == "probe":
            return cmd_probe(args)
        if args.command == "trace":
            return cmd_trace(args)
        if args.command == "analyze":
            return cmd_analyze(args)
        if args.command == "recommend":
            return cmd_recommend(args)
        if args.command == "history":
            return cmd_history(args)
        if args.command == "plan":
            return cmd_plan(args)
        if args.command == "apply":
            return cmd_apply(args)
        return cmd_tui(args)
    except KeyboardInterrupt:
        print("cachewise: interrupted; nothing was changed.", file=sys.stderr)
        return 130


def _error(message: str) -> int:
    print(f"cachewise: {message}", file=sys.stderr)
    return 1


def _snapshot(args: argparse.Namespace, runner: CommandRunner | None = None) -> RawSystem | None:
    """The --from-raw snapshot, or the live system's; None, after saying why, when the file
    cannot be read."""
    if not getattr(args, "from_raw", None):
        return collect(runner or CommandRunner())
    try:
        return RawSystem.load(args.from_raw)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        _error(f"cannot read the raw snapshot {args.from_raw}: {exc}. Nothing was changed.")
        return None


def cmd_scan(args: argparse.Namespace) -> int:
    raw = _snapshot(args)
    if raw is None:
        return 1
    if args.save_raw:
        args.save_raw.write_text(json.dumps(raw.to_json(), indent=1, sort_keys=True) + "\n")
    inv = build_inventory(raw)
    if not args.no_record and not args.from_raw:
        try:
            with History.open_default(args.state_dir) as hist:
                hist.record_inventory(inv)
        except HistoryError as exc:
            print(f"cachewise: warning: {exc}", file=sys.stderr)
    if args.json:
        json.dump(inv.to_json(show_all=args.all), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console

    from cachewise.render import devices_table

    console = Console()
    console.print(devices_table(inv, show_all=args.all))
    for note in inv.notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    hidden = len(inv.devices) - len(inv.visible(False))
    if hidden and not args.all:
        console.print(f"[dim]{hidden} loop, zram or empty devices hidden; --all shows them.[/]")
    return 0


PROBE_SCHEMA = "cachewise.probe/1"


def cmd_probe(args: argparse.Namespace) -> int:
    import os

    from advisor.disks.devices import Device

    if not 0.5 <= args.seconds <= 60:
        return _error(f"--seconds must be between 0.5 and 60 (got {args.seconds:g}); nothing was probed.")
    runner = CommandRunner()
    if runner.which("fio") is None:
        return _error("fio is not installed, so the probe cannot run; install the fio package "
                      "(apt-get install fio). Nothing was probed.")
    if len(set(args.devices)) != len(args.devices):
        return _error("the same device is named twice; nothing was probed.")
    try:
        nodes = [check_target(path) for path in args.devices]
    except ProbeError as exc:
        return _error(str(exc))
    inv = build_inventory(collect(runner))
    by_devnum = {d.devnum: d for d in inv.devices}
    targets: list[Device] = []
    for path, node in zip(args.devices, nodes, strict=True):
        st = os.stat(node)
        dev = by_devnum.get(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
        if dev is None:
            return _error(f"{path} is a block device that discovery does not list; nothing was probed.")
        targets.append(dev)
    if len({d.name for d in targets}) != len(targets):
        return _error("two of the paths name the same device; nothing was probed.")
    busy = [d for d in targets if d.state == "in-use"]
    if busy and not args.yes:
        for d in busy:
            print(f"cachewise: {d.name} is {d.in_use_reason}; the probe adds about {args.seconds:g} s of read load.",
                  file=sys.stderr)
        if not sys.stdin.isatty():
            return _error("pass --yes to probe busy disks anyway; nothing was probed.")
        answer = input("Probe anyway? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            return _error("not probed; nothing was changed.")

    results: list[ProbeResult] = []
    failed = False
    show_progress = sys.stderr.isatty() and not args.json
    for dev in targets:
        def progress(p: ProbeProgress) -> None:
            print(f"\r{p.device}: {p.description} ({p.elapsed:4.1f}/{p.total:g} s, {p.iops:,.0f} IOPS)   ",
                  end="", file=sys.stderr, flush=True)

        try:
            result = probe_device(dev, runner, seconds=args.seconds, on_progress=progress if show_progress else None)
        except (ProbeError, CommandError) as exc:
            if show_progress:
                print(file=sys.stderr)
            print(f"cachewise: {exc}", file=sys.stderr)
            failed = True
            continue
        if show_progress:
            print(file=sys.stderr)
        results.append(result)
        failed |= not result.complete
        if not args.no_record:
            try:
                with History.open_default(args.state_dir) as hist:
                    hist.record_probe(result, dev.serial, dev.wwn)
            except HistoryError as exc:
                print(f"cachewise: warning: {exc}", file=sys.stderr)
    if args.json:
        json.dump({"schema": PROBE_SCHEMA, "results": [r.to_json() for r in results]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif results:
        from rich.console import Console

        from cachewise.render import probe_table

        console = Console()
        console.print(probe_table(results))
        for r in results:
            for line in (*r.classification.disagreements, *r.notes):
                console.print(f"[yellow]{r.device}:[/] {line}", highlight=False)
    return 1 if failed else 0


def parse_size(text: str) -> int:
    """'4k', '32KiB', '1g', '65536' -> bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmg]?)(i?b)?\s*", text.lower())
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    return int(match[1]) << {"": 0, "k": 10, "m": 20, "g": 30}[match[2]]


def parse_duration(text: str) -> float:
    """'90', '90s', '10m', '2h' -> seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text.lower())
    if match is None or float(match[1]) <= 0:
        raise ValueError(f"not a duration: {text!r} (use 90s, 10m or 2h)")
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[match[2]]


def cmd_trace(args: argparse.Namespace) -> int:
    import os

    from advisor.workload.capture import (
        Capture,
        CaptureError,
        CaptureProgress,
        capture_with_blktrace,
        plan_capture,
        tracefs,
    )

    try:
        seconds = parse_duration(args.duration)
    except ValueError as exc:
        return _error(f"{exc}; nothing was traced.")
    if os.geteuid() != 0:
        return _error("tracing block I/O needs root (tracefs); nothing was traced. Run `sudo cachewise trace ...`.")
    if args.output.exists():
        return _error(f"{args.output} already exists; nothing was traced. Choose another name or remove it.")
    runner = CommandRunner()
    show = sys.stderr.isatty() and not args.json

    def progress(p: CaptureProgress) -> None:
        lost = f", {p.lost:,} lost" if p.lost else ""
        print(f"\r{p.events:,} events ({p.rate:,.0f}/s{lost}), {p.elapsed:,.0f} of {seconds:,.0f} s; Ctrl-C stops   ",
              end="", file=sys.stderr, flush=True)

    try:
        plan = plan_capture(build_inventory(collect(runner)), args.device)
        tracer = args.tracer
        if tracer == "auto":
            try:
                tracefs(runner)
                tracer = "tracefs"
            except CaptureError:
                if runner.which("blktrace") is None:
                    raise
                tracer = "blktrace"
        if tracer == "tracefs":
            with Capture(plan, runner) as cap, args.output.open("xb") as out:
                result = cap.run(out, seconds, progress if show else None)
        else:
            if show:
                print(f"tracing {plan.devnode} with blktrace for {seconds:,.0f} s…", file=sys.stderr)
            with args.output.open("xb") as out:
                result = capture_with_blktrace(plan, runner, out, seconds)
    except CaptureError as exc:
        if args.output.exists() and args.output.stat().st_size == 0:
            args.output.unlink()
        return _error(str(exc))
    if show:
        print(file=sys.stderr)
    event = plan.event if tracer == "tracefs" else "blktrace"
    summary = {"schema": "cachewise.trace/1", "path": str(args.output), "device": plan.devnode, "event": event,
               "events": result.events, "seconds": result.seconds, "lost": result.lost, "bad_lines": result.bad_lines,
               "stopped_by": result.stopped_by}
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        lost = f"; {result.lost:,} events were lost (the trace buffer overflowed)" if result.lost else ""
        print(f"{result.events:,} requests of {plan.devnode} in {result.seconds:,.1f} s written to {args.output}{lost}. "
              f"Next: cachewise analyze {args.output}")
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from advisor.workload.analysis import analyze_path
    from advisor.workload.traces import MSR, CsvLayout, TraceError, file_sha256

    try:
        block_size = parse_size(args.block_size)
        layout = MSR
        if args.csv_columns:
            layout = CsvLayout.parse(args.csv_columns, args.csv_time_unit or "s", args.csv_header)
        elif args.csv_time_unit or args.csv_header:
            layout = CsvLayout(MSR.time, MSR.op, MSR.offset, MSR.size, args.csv_time_unit or MSR.time_unit, args.csv_header)
        result, meta = analyze_path(args.trace, block_size, args.mode, args.format, layout)
    except (TraceError, ValueError) as exc:
        return _error(f"{exc}" if "nothing was analysed" in str(exc) else f"{exc}; nothing was analysed.")
    if not args.no_record:
        try:
            with History.open_default(args.state_dir) as hist:
                hist.record_analysis(result, file_sha256(args.trace), meta)
        except HistoryError as exc:
            print(f"cachewise: warning: {exc}", file=sys.stderr)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console

    from cachewise.render import analysis_report

    Console().print(analysis_report(result))
    return 0


def cmd_recommend(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from advisor.advice import facts as sysfacts
    from advisor.advice.recommend import Inputs, RecommendError, recommend
    from advisor.workload.analysis import analyze_path
    from advisor.workload.traces import TraceError

    nothing = "Nothing was changed."
    try:
        data_size = parse_size(args.data_size) if args.data_size else None
        budget = parse_size(args.cache_size) if args.cache_size else None
    except ValueError as exc:
        return _error(f"{exc}. {nothing}")
    for name in ("hot_fraction", "read_share"):
        value = getattr(args, name)
        if value is not None and not 0 < value <= 1:
            return _error(f"--{name.replace('_', '-')} must be between 0 and 1 (got {value:g}). {nothing}")
    runner = CommandRunner()
    raw = _snapshot(args, runner)
    if raw is None:
        return 1
    inv = build_inventory(raw)
    devices = []
    for path in [args.slow, *args.fast]:
        dev = sysfacts.find_device(inv, path)
        if dev is None:
            return _error(f"{path} is not a block device on this machine (see `cachewise scan`). {nothing}")
        devices.append(dev)
    if len({d.name for d in devices}) != len(devices):
        return _error(f"the same device is named twice ({', '.join([args.slow, *args.fast])}). {nothing}")
    analysis = None
    if args.trace:
        try:
            analysis, _ = analyze_path(args.trace)
        except (TraceError, ValueError) as exc:
            return _error(f"cannot analyse {args.trace}: {exc}. {nothing}")

    hist: History | None = None
    try:
        hist = History.open_default(args.state_dir)
    except HistoryError as exc:
        print(f"cachewise: warning: no probe history ({exc}); device classes come from the kernel.", file=sys.stderr)

    def probe_of(d: object) -> dict[str, object] | None:
        ident, size = getattr(d, "identity", None), getattr(d, "size_bytes", 0)
        return hist.latest_probe(ident, size) if hist is not None and ident else None

    try:
        slow = sysfacts.device_facts(inv, devices[0], probe_of)
        fast = tuple(sysfacts.device_facts(inv, d, probe_of, None if args.from_raw else sysfacts.endurance(runner, d.devnode))
                     for d in devices[1:])
    finally:
        if hist is not None:
            hist.close()
    versions = sysfacts.versions(runner) if not args.from_raw else sysfacts.Versions()
    if args.kernel:
        versions = replace(versions, kernel=args.kernel)
    inputs = Inputs(slow=slow, fast=fast, analysis=analysis, workload=args.workload, hot_fraction=args.hot_fraction,
                    read_share=args.read_share, filesystem=args.fs, data_bytes=data_size,
                    fast_mirrored=args.mirrored, accept_writeback_risk=args.accept_writeback_risk,
                    reformat_ok=args.reformat_ok, cache_budget_bytes=budget, read_iops=args.read_iops,
                    versions=versions)
    try:
        rec = recommend(inputs)
    except RecommendError as exc:
        return _error(f"{exc}. {nothing}")
    if args.json:
        json.dump(rec.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console

    from cachewise.render import recommendation_report

    Console().print(recommendation_report(rec))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from recipes.bcache import bcache_create, bcache_detach
    from recipes.lvmcache import (
        CacheSpec,
        RecipeError,
        lvmcache_attach,
        lvmcache_mode,
        lvmcache_new,
        lvmcache_uncache,
    )

    nothing = "Nothing was changed."
    if args.output is not None and args.output.exists():
        return _error(f"{args.output} already exists; choose another name or remove it. {nothing}")
    raw = _snapshot(args)
    if raw is None:
        return 1
    inv = build_inventory(raw)
    try:
        if args.recipe == "lvmcache-attach":
            spec = _cache_spec(args)
            plan = lvmcache_attach(inv, args.lv, args.ssd, spec, wipe=args.wipe, allow_partition=args.allow_partition)
        elif args.recipe == "lvmcache-uncache":
            plan = lvmcache_uncache(inv, args.lv, keep_pool=args.keep_pool, release=args.release_ssd)
        elif args.recipe == "lvmcache-new":
            plan = lvmcache_new(inv, args.hdd, args.ssd, args.vg, args.lv,
                                CacheSpec(parse_size(args.size), mode=args.mode), wipe=args.wipe)
        elif args.recipe == "lvmcache-mode":
            plan = lvmcache_mode(inv, args.lv, args.mode)
        elif args.recipe == "bcache-create":
            plan = bcache_create(inv, args.backing, args.cache, mode=args.mode,
                                 sequential_cutoff=parse_size(args.sequential_cutoff),
                                 writeback_percent=args.writeback_percent, wipe=args.wipe)
        else:
            plan = bcache_detach(inv, args.device, wipe_cache=args.wipe_cache)
    except (RecipeError, ValueError) as exc:
        return _error(str(exc) if nothing in str(exc) else f"{exc}. {nothing}")
    if args.format == "ansible":
        from recipes.ansible import AnsibleError, render

        try:
            book = render(plan)
        except AnsibleError as exc:
            return _error(f"{exc}. {nothing}")
        if args.output is not None:
            args.output.write_text(book)
            print(f"Playbook written to {args.output}: ansible-playbook -i HOSTS {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(book)
        return 0
    if args.output is not None:
        args.output.write_text(plan.dumps())
    if args.json or args.format == "json":
        sys.stdout.write(plan.dumps())
        return 0
    from rich.console import Console

    from cachewise.render import plan_preview

    Console().print(plan_preview(plan))
    if args.output is not None:
        print(f"\nSaved to {args.output}. Run it with: sudo cachewise apply {args.output}")
    return 0


def _cache_spec(args: argparse.Namespace) -> CacheSpec:
    from recipes.lvmcache import CacheSpec

    size = parse_size(args.size) if args.size else None
    chunk = parse_size(args.chunk) if args.chunk else None
    meta = parse_size(args.metadata) if args.metadata else None
    mode, policy = args.mode, "smq"
    if args.recommendation is not None:
        try:
            rec = json.loads(args.recommendation.read_text())
            cfg = rec["config"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"cannot read the recommendation {args.recommendation}: {exc}") from None
        if not cfg or cfg.get("backend") != "lvmcache":
            raise ValueError(f"the recommendation in {args.recommendation} is not an lvmcache "
                             f"({rec.get('summary', 'no cache')})")
        size = size or int(cfg["size_bytes"])
        chunk = chunk or cfg.get("chunk_size_bytes")
        meta = meta or cfg.get("metadata_size_bytes")
        mode = mode or cfg["mode"]
        policy = cfg.get("policy") or policy
    if size is None:
        raise ValueError("give the cache size (--size 40g) or a recommendation (--recommendation rec.json)")
    return CacheSpec(size_bytes=size, mode=mode or "writethrough", chunk_bytes=chunk, metadata_bytes=meta, policy=policy)


def cmd_apply(args: argparse.Namespace) -> int:
    import os

    from advisor.apply.run import (
        ApplyError,
        Event,
        Journal,
        LiveState,
        apply,
        preflight,
        rollback,
        unfinished_journals,
    )
    from advisor.plan.model import Plan, PlanError

    nothing = "Nothing was changed."
    if os.geteuid() != 0:
        return _error(f"applying a plan changes disks and needs root; run it with sudo. {nothing}")
    state_dir = args.state_dir or default_state_dir()
    runner = CommandRunner()
    pending = unfinished_journals(state_dir) if state_dir.is_dir() else []
    journal: Journal | None = None
    if args.resume or args.rollback:
        if not pending:
            return _error(f"there is no interrupted plan to {'resume' if args.resume else 'roll back'}. {nothing}")
        journal = pending[-1]
        plan = journal.plan
    else:
        if args.plan is None:
            if pending:
                return _error(f"an earlier plan was interrupted ({pending[-1].path.name}): run `cachewise apply "
                              f"--resume` to finish it or `cachewise apply --rollback` to undo it. {nothing}")
            return _error(f"name the plan to apply (cachewise apply plan.json). {nothing}")
        if pending:
            return _error(f"an earlier plan was interrupted ({pending[-1].path.name}); finish it with `cachewise "
                          f"apply --resume` or undo it with `cachewise apply --rollback` first. {nothing}")
        try:
            plan = Plan.loads(args.plan.read_text())
        except OSError as exc:
            return _error(f"cannot read the plan {args.plan}: {exc.strerror}. {nothing}")
        except PlanError as exc:
            return _error(f"{args.plan}: {exc}. {nothing}")
    try:
        state = LiveState.read(runner)
        problems = preflight(plan, runner, state, resuming=journal is not None)
    except CommandError as exc:
        return _error(f"cannot read the system's state: {exc}. {nothing}")
    if problems:
        changed = [p for p in problems if "now a different device" in p or "changed size" in p or "not present" in p]
        lead = "the devices changed since the plan was made" if changed else "the plan cannot run as things stand"
        return _error(f"{lead}:\n  - " + "\n  - ".join(problems) + f"\n{nothing} Make a new plan if the disks changed.")
    target = next((d.path for d in plan.devices if d.role == "origin"), plan.devices[0].path)
    if not args.yes:
        if not sys.stdin.isatty():
            return _error(f"applying changes disks; pass --yes to confirm without a terminal. {nothing}")
        from rich.console import Console

        from cachewise.render import plan_preview

        Console().print(plan_preview(plan))
        answer = input(f"Type the device name to confirm ({target}): ").strip()
        if answer != target:
            return _error(f"the name did not match; {nothing}")

    def report(e: Event) -> None:
        if args.json:
            return
        text = {"skip": f"= {e.step.description} (already done)", "run": f"$ {e.message}",
                "ok": f"  ok: {e.step.description}", "progress": f"  … {e.message}",
                "undo": f"$ {e.message}"}.get(e.kind, e.message)
        print(text, file=sys.stderr, flush=True)

    try:
        if args.rollback:
            assert journal is not None
            rollback(journal, runner, state_dir, report)
            outcome = "rolled-back"
        else:
            journal = apply(plan, runner, state_dir, report, journal=journal)
            outcome = "done"
    except ApplyError as exc:
        if args.json:
            json.dump({"outcome": "stopped", "message": str(exc)}, sys.stdout, indent=2)
            sys.stdout.write("\n")
        print(f"cachewise: {exc}", file=sys.stderr)
        return 1
    result: dict[str, object] = {"outcome": outcome, "plan": plan.kind, "journal": str(journal.path)}
    if plan.kind == "bcache-create" and outcome == "done":
        result["bcache_device"] = _bcache_path(plan, runner)
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"{plan.title}: {outcome}. Journal: {journal.path}")
        if result.get("bcache_device"):
            print(f"The bcache device: {result['bcache_device']} (use this path; bcacheN numbers change between boots)")
    return 0


def _bcache_path(plan: object, runner: CommandRunner) -> str | None:
    """The stable path of the bcache device made on the plan's backing device."""
    from advisor.disks.discovery import find_device

    backing_path = next(d.path for d in plan.devices if d.role == "backing")  # type: ignore[attr-defined]
    inv = build_inventory(collect(runner))
    backing = find_device(inv, backing_path)
    if backing is None:
        return None
    for d in inv.devices:
        if d.kind == "bcache" and backing.name in d.slaves:
            return d.stable_path or d.devnode
    return None


def cmd_history(args: argparse.Namespace) -> int:
    try:
        with History.open_default(args.state_dir) as hist:
            rows = hist.snapshots(args.limit)
            path = hist.path
    except HistoryError as exc:
        return _error(str(exc))
    if args.json:
        json.dump({"database": str(path), "snapshots": [r.__dict__ for r in rows]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"history database: {path}")
    for r in rows:
        print(f"#{r.id}  {r.taken_at}  {r.hostname}  {r.device_count} devices  udev {r.udev}")
    if not rows:
        print("no snapshots yet; `cachewise scan` records one.")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    if not sys.stdout.isatty():
        return _error("the terminal UI needs a terminal; use a subcommand such as `cachewise scan --json` in scripts.")
    from screens.app import CachewiseApp, DiscoveryBackend, LiveDiscovery, ReplayDiscovery

    discovery: DiscoveryBackend
    if getattr(args, "from_raw", None):
        raw = _snapshot(args)
        if raw is None:
            return 1
        discovery = ReplayDiscovery(raw)
        app = CachewiseApp(discovery=discovery, state_dir=None, watch_hotplug=False)
    else:
        discovery = LiveDiscovery(CommandRunner())
        app = CachewiseApp(discovery=discovery, state_dir=args.state_dir or default_state_dir())
    app.run()
    return 0
