"""The `cachewise` command: the TUI with no arguments, headless subcommands otherwise.

Every subcommand takes ``--json`` so cachewise can be scripted across many hosts. Each one
parses its arguments, calls the application core (cachewise/core.py) and renders the result;
the core and the domain are imported inside the commands, so a command loads only what it uses.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.advice.workloads import workload_types
from advisor.disks.probe import DEFAULT_SECONDS
from advisor.history import STATE_ENV
from advisor.units import UnitError, parse_duration, parse_size, rate
from cachewise import __version__

if TYPE_CHECKING:
    from advisor.apply.run import Event
    from advisor.plan.model import Plan
    from advisor.watch.sampler import Sample
    from advisor.workload.traces import TraceError
    from cachewise.core import Core

NOTHING = "Nothing was changed."


def _common(
    p: argparse.ArgumentParser, *, json: str | None = None, record: str | None = None, raw: str | None = None
) -> None:
    """The flags several subcommands share: --json (what it prints), --no-record, --from-raw."""
    if json:
        p.add_argument("--json", action="store_true", help=f"print JSON ({json})")
    if record:
        p.add_argument("--no-record", action="store_true", help=f"do not record {record} in the history database")
    if raw:
        p.add_argument("--from-raw", type=Path, metavar="FILE", help=raw)


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand and option; the man page and the shell completions are generated from it."""
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

    scan = sub.add_parser(
        "scan",
        help="list disks, partitions, LVM, bcache and other block devices",
        description="Discover block devices with their stable identity, transport, size and what uses them.",
    )
    _common(
        scan,
        json="schema cachewise.scan/1, see docs/scan-json.md",
        record="this scan",
        raw="build the report from a raw snapshot saved with --save-raw instead of this machine",
    )
    scan.add_argument("--all", action="store_true", help="include loop, zram and empty devices")
    scan.add_argument(
        "--save-raw",
        type=Path,
        metavar="FILE",
        help="also write the raw udev/sysfs facts to FILE (for bug reports and test fixtures)",
    )

    probe = sub.add_parser(
        "probe",
        help="measure disks with short read-only fio probes and classify them",
        description="Measure each DEVICE with a short read-only fio probe (random 4 KiB reads at queue depth 1 and 32, "
        "sequential 1 MiB reads across the disk) and classify it as hdd, ssd or nvme by measured latency. "
        "Probes never write. Needs root and fio.",
    )
    probe.add_argument("devices", nargs="+", metavar="DEVICE", help="a disk, e.g. /dev/sdb or a /dev/disk/by-id/ path")
    _common(probe, json="schema cachewise.probe/1", record="the results")
    probe.add_argument(
        "--seconds",
        type=float,
        default=DEFAULT_SECONDS,
        help=f"time budget per device (default {DEFAULT_SECONDS:g}, at most 60)",
    )
    probe.add_argument(
        "--yes", action="store_true", help="probe mounted or busy disks without asking (the probe adds read load)"
    )

    trace = sub.add_parser(
        "trace",
        help="record a device's block I/O to a trace file (root)",
        description="Record the block I/O of a disk, partition, LV or other device-mapper device through the "
        "kernel's block tracepoints (tracefs; nothing to install). Streams to FILE with bounded memory; stops "
        "after --duration or on Ctrl-C. Analyse the result with `cachewise analyze FILE`.",
    )
    trace.add_argument("device", metavar="DEVICE")
    trace.add_argument("--duration", default="10m", help="how long: 90s, 10m (default), 2h")
    trace.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE", help="the trace file to write (must not exist)"
    )
    _common(trace, json="a summary, schema cachewise.trace/1")
    trace.add_argument(
        "--tracer",
        default="auto",
        choices=["auto", "tracefs", "blktrace"],
        help="tracefs tracepoints (default), or blktrace and blkparse where tracefs cannot be used",
    )

    analyze = sub.add_parser(
        "analyze",
        help="analyse a block trace: miss-ratio curve, hot-data ratio, mix",
        description="Analyse a block I/O trace (a cachewise trace, a fio iolog v2/v3, blkparse text, or CSV): "
        "footprint, read/write mix, sequential share, request sizes, the exact LRU miss-ratio curve from 0.1%% to "
        "100%% of the footprint, the hot-data ratio and a Zipf exponent.",
    )
    analyze.add_argument("trace", type=Path, metavar="TRACE")
    _common(analyze, json="schema cachewise.analysis/1", record="the analysis")
    analyze.add_argument(
        "--block-size", default="4k", help="cache block size: 4k (default), 32k ... 1g (dm-cache chunks)"
    )
    analyze.add_argument(
        "--sequential-cutoff",
        default="4m",
        metavar="SIZE",
        help="streams longer than this are bypassed by the cache and counted apart from the curve, "
        "as bcache's sequential_cutoff does (default 4m; 0 counts every request)",
    )
    analyze.add_argument(
        "--mode",
        default="auto",
        choices=["auto", "exact", "shards"],
        help="curve by exact stack distances, or by SHARDS sampling (default: exact up to 12 million "
        "block accesses, SHARDS beyond)",
    )
    analyze.add_argument(
        "--format",
        default="auto",
        choices=["auto", "cachewise", "fio", "blkparse", "csv"],
        help="trace format (default: detected)",
    )
    analyze.add_argument(
        "--csv-columns",
        default=None,
        metavar="SPEC",
        help="CSV columns, e.g. time=0,op=3,offset=4,size=5 (default: the MSR Cambridge layout)",
    )
    analyze.add_argument(
        "--csv-time-unit",
        default=None,
        choices=["s", "ms", "us", "ns", "filetime"],
        help="unit of the CSV time column (default: filetime for MSR, else s)",
    )
    analyze.add_argument("--csv-header", action="store_true", help="the CSV's first line is a header")

    replay_p = sub.add_parser(
        "replay",
        help="replay a trace onto a device with fio (read-only): the workload before and after a cache",
        description="Replay a block trace (a cachewise trace, a fio iolog, blkparse text or CSV) onto DEV with fio, "
        "O_DIRECT and libaio, keeping its timing, and report IOPS and read latency. Offsets wrap onto DEV; lengths "
        "are whole 4 KiB blocks, at most 1 MiB. Read-only: write requests are dropped and counted, unless "
        "--allow-writes and --disposable DEV name an empty scratch device. Run it before and after adding a cache "
        "and compare with --compare. Needs root and fio.",
    )
    replay_p.add_argument("trace", type=Path, metavar="TRACE")
    replay_p.add_argument("--target", required=True, metavar="DEV", help="the device to replay onto, e.g. /dev/vg/data")
    replay_p.add_argument(
        "--speed",
        type=_positive,
        default=1.0,
        metavar="N",
        help="time runs N times as fast (2: twice the request rate; default 1)",
    )
    replay_p.add_argument(
        "--duration",
        metavar="D",
        help="replay the first D of the trace (90s, 10m); a trace without times stops after D",
    )
    replay_p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "cachewise", "fio", "blkparse", "csv"],
        help="trace format (default: detected)",
    )
    replay_p.add_argument("--label", metavar="TEXT", help="this run's name in tables (default: the device and time)")
    replay_p.add_argument(
        "--allow-writes",
        action="store_true",
        help="replay the write requests too; needs --disposable naming the same device",
    )
    replay_p.add_argument(
        "--disposable", metavar="DEV", help="repeat --target's path: its data may be destroyed (it must hold nothing)"
    )
    replay_p.add_argument(
        "--compare",
        type=Path,
        nargs="+",
        metavar="FILE",
        help="earlier `replay --json` outputs to show side by side with this run",
    )
    _common(replay_p, json="schema cachewise.replay/1 (this run only)")

    rec = sub.add_parser(
        "recommend",
        help="recommend a cache: backend, size, mode and tunables, with reasons",
        description="Recommend how to cache the slow device with the fast one(s): lvmcache, lvmcache writecache, "
        "bcache, or no cache; the cache size from the workload's miss-ratio curve; writethrough or writeback; chunk, "
        "metadata and bcache tunables; predicted hit ratio and warm-up. Every reason cites a published finding. "
        "Uses the newest probes from the history database (`cachewise probe`). Changes nothing.",
    )
    rec.add_argument("--slow", required=True, metavar="DEV", help="the slow device or LV that holds the data")
    rec.add_argument(
        "--fast",
        required=True,
        action="append",
        metavar="DEV",
        help="a fast device (SSD) for the cache; twice for a mirrored pair",
    )
    src = rec.add_mutually_exclusive_group()
    src.add_argument(
        "--trace", type=Path, metavar="FILE", help="a trace of the slow device's workload (`cachewise trace`)"
    )
    src.add_argument("--workload", choices=workload_types(), help="declare the workload when there is no trace")
    rec.add_argument(
        "--hot-fraction",
        type=_positive,
        metavar="F",
        help="declared: the share of the data that serves 90%% of the I/O (0.1 for fio's zipf:1.2)",
    )
    rec.add_argument("--read-share", type=_positive, metavar="F", help="declared: the share of I/O that is reads")
    rec.add_argument("--fs", choices=["ext4", "xfs", "other"], help="the file system (default: detected on --slow)")
    rec.add_argument(
        "--data-size", metavar="SIZE", help="the dataset's size, e.g. 48g (default: the slow device's size)"
    )
    rec.add_argument("--cache-size", metavar="SIZE", help="at most this much SSD space for the cache")
    rec.add_argument(
        "--mirrored",
        action="store_true",
        help="you say the fast devices are (or will be) mirrored; cachewise cannot see it, so this "
        "accepts writeback's risk like --accept-writeback-risk",
    )
    rec.add_argument(
        "--accept-writeback-risk",
        action="store_true",
        help="allow writeback on a single SSD: dirty data is lost if it fails",
    )
    rec.add_argument(
        "--reformat-ok", action="store_true", help="the slow device's data may be moved off and back (bcache)"
    )
    rec.add_argument(
        "--read-iops", type=_positive, metavar="N", help="declared read rate, for a warm-up time without a trace"
    )
    rec.add_argument("--kernel", metavar="VERSION", help="plan for this kernel instead of the running one")
    _common(rec, json="schema cachewise.recommend/1", raw="plan from a raw snapshot saved with `scan --save-raw`")

    plan = sub.add_parser(
        "plan",
        help="make a plan (a dry run): the exact commands to attach or remove a cache",
        description="Build a plan and print it: the exact commands, the layout before and after, what will be "
        "destroyed, the space used and the expected time. Nothing runs; `cachewise apply PLAN` runs a plan "
        "saved with -o.",
    )
    plan_sub = plan.add_subparsers(dest="recipe", metavar="RECIPE", required=True)
    modes = ["writethrough", "writeback"]
    attach = plan_sub.add_parser(
        "lvmcache-attach",
        help="attach an lvmcache to an LV in place",
        description="Attach a cache pool on an SSD to an existing LV: pvcreate, vgextend, "
        "lvcreate (data and metadata), lvconvert --type cache-pool, lvconvert --type cache.",
    )
    _attach_options(attach, "the cache pool", "size, chunk, metadata, mode and policy")
    attach.add_argument("--mode", choices=modes, help="cache mode (default writethrough)")
    attach.add_argument("--chunk", metavar="SIZE", help="chunk size, a multiple of 32k (default: lvm2's rule)")
    attach.add_argument("--metadata", metavar="SIZE", help="metadata size (default: lvm2's rule)")
    attach.add_argument("--allow-partition", action="store_true", help="use a partition of the SSD, not the whole disk")
    uncache = plan_sub.add_parser(
        "lvmcache-uncache",
        help="remove an lvmcache (dirty blocks are flushed first)",
        description="Flush and remove the cache of an LV (lvconvert --uncache), or keep the "
        "cache pool as an LV (--keep-pool, lvconvert --splitcache).",
    )
    uncache.add_argument("--keep-pool", action="store_true", help="split the cache off but keep the cache pool LV")
    uncache.add_argument(
        "--release-ssd",
        action="append",
        metavar="DEV",
        help="then take this SSD out of the VG and remove its label (twice for a mirrored pool)",
    )
    new = plan_sub.add_parser(
        "lvmcache-new",
        help="a new cached LV on an empty HDD and SSD",
        description="Make both disks PVs of a new VG, an LV on all of the HDD, and attach a cache pool on the SSD.",
    )
    for flag in ("--hdd", "--vg", "--lv"):
        new.add_argument(flag, required=True, metavar="DEV" if flag == "--hdd" else None)
    new.add_argument(
        "--ssd", required=True, action="append", metavar="DEV", help="the SSD; twice to mirror the cache pool"
    )
    new.add_argument("--size", required=True, metavar="SIZE", help="cache size")
    new.add_argument("--mode", choices=modes, default="writethrough")
    cmode = plan_sub.add_parser(
        "lvmcache-mode",
        help="switch an lvmcache between writethrough and writeback",
        description="Switch a cached LV's mode with lvchange --cachemode; leaving writeback, "
        "lvm2 writes the dirty blocks back first.",
    )
    cmode.add_argument("--mode", required=True, choices=modes)
    for p in (uncache, cmode):
        p.add_argument("--lv", required=True, help="the cached LV, as VG/LV")
    bcreate = plan_sub.add_parser(
        "bcache-create",
        help="make a bcache device on empty disks",
        description="Format an empty HDD as bcache backing and an empty SSD as its cache "
        "(make-bcache), register and attach them, set cache_mode, sequential_cutoff and "
        "writeback_percent. Refuses a backing device that holds data (use lvmcache).",
    )
    bcreate.add_argument("--backing", required=True, metavar="DEV", help="the slow device (empty)")
    bcreate.add_argument("--cache", required=True, metavar="DEV", help="the SSD (empty)")
    bcreate.add_argument("--mode", choices=modes, default="writethrough")
    bcreate.add_argument("--sequential-cutoff", default="4m", metavar="SIZE", help="default 4m (T-SEQ-1)")
    bcreate.add_argument("--writeback-percent", type=int, default=10, metavar="N", help="default 10")
    wattach = plan_sub.add_parser(
        "writecache-attach",
        help="attach a dm-writecache (caches writes only) to an LV",
        description="Attach a dm-writecache on an SSD (or mirrored on two) to an existing "
        "LV in place: pvcreate, vgextend, lvcreate (the cache volume, raid1 on two SSDs), "
        "lvchange -an, lvconvert --type writecache --cachevol. The block size (512 or 4096) "
        "follows the file system's, so that it still mounts.",
    )
    _attach_options(wattach, "the cache volume", "size and block size")
    wattach.add_argument(
        "--block-size", type=int, choices=[512, 4096], help="writecache block size (default: from the file system)"
    )
    wattach.add_argument("--high-watermark", type=int, metavar="PERCENT", help="start writeback at this fill")
    wattach.add_argument("--low-watermark", type=int, metavar="PERCENT", help="stop writeback at this fill")
    wattach.add_argument("--writeback-jobs", type=int, metavar="N", help="blocks in flight during writeback")
    wattach.add_argument(
        "--allow-partition", action="store_true", help="use a partition of the SSD, not the whole disk"
    )
    wdetach = plan_sub.add_parser(
        "writecache-detach",
        help="remove a dm-writecache (dirty blocks are flushed first)",
        description="Flush and remove the writecache of an LV (lvconvert --uncache), or "
        "keep the cache volume as an LV (--keep-cachevol, lvconvert --splitcache).",
    )
    wdetach.add_argument("--lv", required=True, help="the LV with the writecache, as VG/LV")
    wdetach.add_argument("--keep-cachevol", action="store_true", help="split the cache off but keep its volume")
    wdetach.add_argument(
        "--release-ssd",
        action="append",
        metavar="DEV",
        help="then take this SSD out of the VG and remove its label (twice for a mirrored one)",
    )
    remove = plan_sub.add_parser(
        "remove",
        help="remove whatever cache a device is part of (flush first)",
        description="Find what cache the device is part of (an lvmcache or dm-writecache "
        "LV, a bcache device or its backing device) and plan its removal with the matching "
        "recipe; refuse, with the reason, a device that is no cache cachewise can remove "
        "(flashcache, EnhanceIO, ZFS, bcachefs).",
    )
    remove.add_argument(
        "--device", required=True, metavar="DEV", help="the cached LV (VG/LV), bcache device or backing device"
    )
    remove.add_argument(
        "--release-ssd", action="append", metavar="DEV", help="then take this SSD out of the VG (LVM caches)"
    )
    for p, what in (
        (attach, "the SSD holds"),
        (new, "the disks hold"),
        (bcreate, "the devices hold"),
        (wattach, "the SSD holds"),
    ):
        p.add_argument("--wipe", action="store_true", help=f"{what} data that may be destroyed")
    bdetach = plan_sub.add_parser(
        "bcache-detach",
        help="detach a bcache cache safely (flush first)",
        description="Switch to writethrough, write back every dirty block, wait for state "
        "clean, detach, wait for 'no cache', stop the cache set.",
    )
    bdetach.add_argument("--device", required=True, metavar="DEV", help="the bcache device or its backing device")
    bdetach.add_argument("--wipe-cache", action="store_true", help="then erase the cache device's bcache superblock")
    for p in (attach, uncache, new, cmode, bcreate, bdetach, wattach, wdetach, remove):
        p.add_argument("-o", "--output", type=Path, metavar="FILE", help="save the plan (JSON) for `cachewise apply`")
        _common(p, json="the plan, schema cachewise.plan/1", raw="plan against a raw snapshot (`scan --save-raw`)")
        p.add_argument(
            "--format",
            choices=["text", "json", "ansible"],
            default="text",
            help="text preview (default), JSON, or an Ansible playbook with the same steps and checks "
            "(with -o, the file is the playbook)",
        )
        p.add_argument("--dry-run", action="store_true", help="only preview (what plan always does; for clarity)")

    apply_p = sub.add_parser(
        "apply",
        help="run a saved plan, journaled; or resume or roll back an interrupted one",
        description="Run a plan saved with `cachewise plan ... -o FILE`. The devices must be the ones the plan was "
        "made for. Each step is journaled, so an interrupted run can be resumed (--resume) or undone (--rollback).",
    )
    apply_p.add_argument("plan", nargs="?", type=Path, metavar="PLAN")
    apply_p.add_argument("--yes", action="store_true", help="do not ask (needed without a terminal)")
    which = apply_p.add_mutually_exclusive_group()
    which.add_argument("--resume", action="store_true", help="finish the interrupted plan")
    which.add_argument("--rollback", action="store_true", help="undo the steps of the interrupted plan")
    which.add_argument(
        "--abandon",
        type=Path,
        metavar="JOURNAL",
        help="neither resume nor roll back this journal's plan: record that, after showing what ran",
    )
    _common(apply_p, json="the outcome")

    status = sub.add_parser(
        "status",
        help="every cache on this machine in one table: mode, state, fill, hit ratio, dirty data",
        description="Read every dm-cache (lvmcache), dm-writecache and bcache device on this machine once: "
        "mode, state, fill, hit ratio since it started, dirty data, and its slow and fast devices. Changes nothing.",
    )
    _common(status, json="schema cachewise.status/1")
    status.add_argument(
        "--prometheus",
        type=Path,
        metavar="FILE",
        help="also write a node_exporter textfile (written beside FILE and renamed over it)",
    )

    watch = sub.add_parser(
        "watch",
        help="follow a cache live: warm-up, hit ratio, IOPS, dirty data and flushes",
        description="Sample a cache every --interval seconds: fill and fill rate, hit ratio per interval and since "
        "the start (against the recommendation's prediction when cachewise made the cache), I/O served by the "
        "cache and by the slow device, dirty data with its rate and time left, and a stalled flush with its "
        "likely causes. Samples go to the history database. Stops on Ctrl-C, after --count or --duration, or "
        "with --until-clean once no dirty data is left. Changes nothing.",
    )
    watch.add_argument(
        "target", metavar="TARGET", help="a cached LV (VG/LV or /dev/VG/LV), or bcacheN or its backing device"
    )
    watch.add_argument(
        "--interval", type=_positive, default=1.0, metavar="S", help="seconds between samples (default 1)"
    )
    watch.add_argument("--count", type=_count, metavar="N", help="stop after N samples")
    watch.add_argument("--duration", metavar="TIME", help="stop after this long: 90s, 10m, 2h")
    watch.add_argument(
        "--until-clean",
        action="store_true",
        help="follow a flush: stop once the cache holds no dirty data (exit 0), or report a stall",
    )
    watch.add_argument(
        "--stall-after",
        type=_positive,
        default=30.0,
        metavar="S",
        help="call a flush stalled after S seconds with dirty data and no progress (default 30)",
    )
    watch.add_argument(
        "--json-lines",
        action="store_true",
        help="print one JSON object per sample (schema cachewise.watch/1) with the kernel's raw values",
    )
    watch.add_argument("--prometheus", type=Path, metavar="FILE", help="keep a node_exporter textfile up to date")
    watch.add_argument("--no-record", action="store_true", help="do not record the samples in the history database")

    hist = sub.add_parser(
        "history",
        help="list recorded discovery snapshots",
        description="List the discovery snapshots recorded in the history database.",
    )
    _common(hist, json="the snapshots")
    hist.add_argument("--limit", type=_count, default=20, help="how many snapshots (default 20)")

    tui = sub.add_parser("tui", help="open the terminal UI (the default)", description="Open the terminal UI.")
    _common(tui, raw="show a raw snapshot saved with `scan --save-raw` instead of this machine")
    tui.add_argument(
        "--watch",
        metavar="TARGET",
        help="open on the Warm-up screen of this cache (VG/LV, bcacheN or its backing device)",
    )

    comp = sub.add_parser(
        "completion",
        help="print the shell completion script for bash or zsh",
        description="Print a completion script generated from these very options. bash: "
        "`cachewise completion bash > ~/.local/share/bash-completion/completions/cachewise`; zsh: "
        "`cachewise completion zsh > ~/.zfunc/_cachewise` with ~/.zfunc on $fpath. The Debian package "
        "installs both.",
    )
    comp.add_argument("shell", choices=["bash", "zsh"])
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(name)s: %(message)s",
        stream=sys.stderr,
    )
    from cachewise.core import Refused

    commands = {
        "scan": cmd_scan,
        "probe": cmd_probe,
        "trace": cmd_trace,
        "analyze": cmd_analyze,
        "recommend": cmd_recommend,
        "history": cmd_history,
        "status": cmd_status,
        "watch": cmd_watch,
        "plan": cmd_plan,
        "apply": cmd_apply,
    }
    commands["replay"] = cmd_replay
    commands["completion"] = cmd_completion
    # SIGTERM and SIGHUP stop a command as Ctrl-C does, through the same clean-up (the trace's
    # kernel instance is removed, fio is stopped; apply finishes the step in progress first).
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    try:
        return commands.get(args.command, cmd_tui)(args)
    except Refused as exc:
        return _error(str(exc))
    except KeyboardInterrupt:
        print("cachewise: interrupted; nothing was changed.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `cachewise scan --json | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _error(message: str) -> int:
    print(f"cachewise: {message}", file=sys.stderr)
    return 1


def _warn(warning: str | None) -> None:
    if warning:
        print(f"cachewise: warning: {warning}", file=sys.stderr)


def _print_json(data: Any) -> int:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _print(renderable: Any) -> None:
    from rich.console import Console

    Console().print(renderable)


def _core(args: argparse.Namespace) -> Core:
    """The core for this machine, or for the raw snapshot given with --from-raw."""
    from cachewise.core import Core, load_snapshot

    if getattr(args, "from_raw", None):
        return Core.for_snapshot(load_snapshot(args.from_raw), args.state_dir)
    return Core.for_machine(args.state_dir)


def _size(text: str | None, what: str, minimum: int = 1, maximum: int = 1 << 60) -> int | None:
    from cachewise.core import Refused

    try:
        return parse_size(text, minimum, maximum) if text is not None else None
    except UnitError as exc:
        raise Refused(f"{what}: {exc}. {NOTHING}") from None


def _positive(text: str) -> float:
    """argparse type: a finite number above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number above zero, not {text!r}")
    return value


def _count(text: str) -> int:
    """argparse type: a whole number from 1 to a million."""
    if not text.strip().isdigit() or not 1 <= int(text) <= 1_000_000:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 1000000, not {text!r}")
    return int(text)


def cmd_scan(args: argparse.Namespace) -> int:
    from advisor.disks.discovery import build_inventory
    from cachewise.core import check_output

    if args.save_raw:
        check_output(args.save_raw, "nothing was scanned or written")
    core = _core(args)
    if args.save_raw:
        raw = core.discovery.collect()
        args.save_raw.write_text(json.dumps(raw.to_json(), indent=1, sort_keys=True) + "\n")
        inv = build_inventory(raw)
    else:
        inv = core.scan()
    if not args.no_record:
        _warn(core.record_inventory(inv))
    if args.json:
        return _print_json(inv.to_json(show_all=args.all))
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
    from advisor.disks.probe import ProbeError, ProbeProgress
    from advisor.runner import CommandError

    if not 0.5 <= args.seconds <= 60:
        return _error(f"--seconds must be between 0.5 and 60 (got {args.seconds:g}); nothing was probed.")
    core = _core(args)
    if core.runner.which("fio") is None:
        return _error(
            "fio is not installed, so the probe cannot run; install the fio package "
            "(apt-get install fio). Nothing was probed."
        )
    targets, _ = core.probe_targets(args.devices)
    busy = [d for d in targets if d.state == "in-use"]
    if busy and not args.yes:
        for d in busy:
            print(
                f"cachewise: {d.name} is {d.in_use_reason}; the probe adds about {args.seconds:g} s of read load.",
                file=sys.stderr,
            )
        if not sys.stdin.isatty():
            return _error("pass --yes to probe busy disks anyway; nothing was probed.")
        if input("Probe anyway? [y/N] ").strip().lower() not in ("y", "yes"):
            return _error("not probed; nothing was changed.")

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
            result, warning = core.probe(dev, args.seconds, progress if show_progress else None, not args.no_record)
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
        _warn(warning)
    if args.json:
        _print_json({"schema": PROBE_SCHEMA, "results": [r.to_json() for r in results]})
    elif results:
        from rich.console import Console

        from cachewise.render import probe_table

        console = Console()
        console.print(probe_table(results))
        for r in results:
            for line in (*r.classification.disagreements, *r.notes):
                console.print(f"[yellow]{r.device}:[/] {line}", highlight=False)
    return 1 if failed else 0


def cmd_trace(args: argparse.Namespace) -> int:
    from advisor.workload.capture import CaptureProgress

    try:
        seconds = parse_duration(args.duration)
    except UnitError as exc:
        return _error(f"{exc}; nothing was traced.")
    show = sys.stderr.isatty() and not args.json

    def progress(p: CaptureProgress) -> None:
        lost = f", {p.lost:,} lost" if p.lost else ""
        print(
            f"\r{p.events:,} events ({rate(p.rate, '/s')}{lost}), "
            f"{p.elapsed:,.0f} of {seconds:,.0f} s; Ctrl-C stops   ",
            end="",
            file=sys.stderr,
            flush=True,
        )

    def blktrace(devnode: str) -> None:
        print(f"tracing {devnode} with blktrace for {seconds:,.0f} s…", file=sys.stderr)

    summary = _core(args).trace(
        args.device, args.output, seconds, args.tracer, progress if show else None, blktrace if show else None
    )
    if show:
        print(file=sys.stderr)
    if args.json:
        return _print_json(summary)
    lost = f"; {summary['lost']:,} events were lost (the trace buffer overflowed)" if summary["lost"] else ""
    print(
        f"{summary['events']:,} requests of {summary['device']} in {summary['seconds']:,.1f} s written to "
        f"{args.output}{lost}. Next: cachewise analyze {args.output}"
    )
    return 0


def _trace_refusal(exc: TraceError) -> str:
    """A trace that cannot be read, with the flag that names its format when it was not detected."""
    return str(exc) + (" Name the format with --format." if exc.code == "unknown-format" else "")


def cmd_analyze(args: argparse.Namespace) -> int:
    from advisor.workload.traces import MSR, CsvLayout, TraceError

    core = _core(args)
    try:
        block_size = parse_size(args.block_size)
        cutoff = parse_size(args.sequential_cutoff, minimum=0)
        layout = MSR
        if args.csv_columns:
            layout = CsvLayout.parse(args.csv_columns, args.csv_time_unit or "s", args.csv_header)
        elif args.csv_time_unit or args.csv_header:
            layout = CsvLayout(
                MSR.time, MSR.op, MSR.offset, MSR.size, args.csv_time_unit or MSR.time_unit, args.csv_header
            )
        result, meta = core.analyze(args.trace, block_size, args.mode, args.format, layout, cutoff)
    except UnitError as exc:
        return _error(f"{exc}; nothing was analysed.")
    except TraceError as exc:
        return _error(_trace_refusal(exc))
    if args.json:
        _print_json(result.to_json())
    else:
        from cachewise.render import analysis_report

        _print(analysis_report(result))
    if not args.no_record:
        _warn(core.record_analysis(result, args.trace, meta))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from advisor.workload.traces import TraceError
    from cachewise.render import replay_table

    try:
        duration = parse_duration(args.duration) if args.duration is not None else None
    except UnitError as exc:
        return _error(f"--duration: {exc}; nothing was replayed.")
    core = _core(args)
    earlier = [core.load_replay_result(path) for path in args.compare or []]
    show = sys.stderr.isatty() and not args.json

    def progress(elapsed: float, expected: float | None) -> None:
        of = f" of about {expected:,.0f}" if expected else ""
        print(f"\rreplaying: {elapsed:,.0f}{of} s; Ctrl-C stops   ", end="", file=sys.stderr, flush=True)

    try:
        result = core.replay_trace(
            args.trace,
            args.target,
            speed=args.speed,
            duration=duration,
            fmt=args.format,
            label=args.label,
            allow_writes=args.allow_writes,
            disposable=args.disposable,
            on_progress=progress if show else None,
        )
    except TraceError as exc:
        return _error(_trace_refusal(exc))
    finally:
        if show:
            print(file=sys.stderr)
    if args.json:
        return _print_json(result.to_json())
    _print(replay_table([*earlier, result]))
    for note in result.notes:
        print(f"note: {note}")
    return 0


def cmd_recommend(args: argparse.Namespace) -> int:
    from advisor.advice.recommend import RecommendError
    from advisor.workload.traces import TraceError

    data_size = _size(args.data_size, "--data-size")
    budget = _size(args.cache_size, "--cache-size")
    for name in ("hot_fraction", "read_share"):
        value = getattr(args, name)
        if value is not None and not 0 < value <= 1:
            return _error(f"--{name.replace('_', '-')} must be between 0 and 1 (got {value:g}). {NOTHING}")
    core = _core(args)
    inv = core.scan()
    analysis = None
    if args.trace:
        try:
            analysis, _ = core.analyze(args.trace)
        except TraceError as exc:
            return _error(f"cannot analyse {args.trace}: {exc} {NOTHING}")
    inputs, warnings = core.recommend_inputs(
        inv,
        args.slow,
        args.fast,
        analysis=analysis,
        kernel=args.kernel,
        workload=args.workload,
        hot_fraction=args.hot_fraction,
        read_share=args.read_share,
        filesystem=args.fs,
        data_bytes=data_size,
        fast_mirrored=args.mirrored,
        accept_writeback_risk=args.accept_writeback_risk,
        reformat_ok=args.reformat_ok,
        cache_budget_bytes=budget,
        read_iops=args.read_iops,
    )
    for warning in warnings:
        _warn(warning)
    try:
        rec = core.recommend(inputs)
    except RecommendError as exc:
        return _error(f"{exc}. {NOTHING}")
    if args.json:
        return _print_json(rec.to_json())
    from cachewise.render import recommendation_report

    _print(recommendation_report(rec))
    return 0


def _attach_options(p: argparse.ArgumentParser, cache: str, taken: str) -> None:
    """The options every attach recipe shares: the LV, the SSD(s), the size or a recommendation."""
    p.add_argument("--lv", required=True, help="the LV to cache, as VG/LV")
    p.add_argument(
        "--ssd",
        required=True,
        action="append",
        metavar="DEV",
        help=f"the SSD (a whole disk, or a PV of the same VG); twice to mirror {cache} (raid1)",
    )
    p.add_argument("--size", metavar="SIZE", help="cache size, e.g. 40g (or take it from --recommendation)")
    p.add_argument(
        "--recommendation", type=Path, metavar="FILE", help=f"a `cachewise recommend --json` output: {taken}"
    )


def cmd_plan(args: argparse.Namespace) -> int:
    from cachewise.core import check_output

    if args.json and args.format == "ansible":
        return _error(f"--json and --format ansible ask for two different outputs; choose one. {NOTHING}")
    if args.output is not None:
        check_output(args.output, "no plan was made; nothing was changed")
    core = _core(args)
    inv = core.scan()
    plan = core.plan(inv, args.recipe, **_recipe_options(args))
    if getattr(args, "recommendation", None) is not None:
        from dataclasses import replace

        from cachewise.core import prediction_from_config

        plan = replace(plan, prediction=prediction_from_config(_recommended_config(args.recommendation)))
    if args.format == "ansible":
        if args.output is not None:
            how = core.save_plan(plan, args.output, "ansible")
            print(f"Playbook written to {args.output}. {how}", file=sys.stderr)
            return 0
        from recipes.ansible import AnsibleError, render

        try:
            sys.stdout.write(render(plan))
        except AnsibleError as exc:
            return _error(f"{exc}. {NOTHING}")
        return 0
    if args.output is not None:
        core.save_plan(plan, args.output)
    if args.json or args.format == "json":
        sys.stdout.write(plan.dumps())
        return 0
    from cachewise.render import plan_preview

    _print(plan_preview(plan))
    if args.output is not None:
        print(f"\nSaved to {args.output}. Run it with: sudo cachewise apply {args.output}")
    return 0


def _recipe_options(args: argparse.Namespace) -> dict[str, Any]:
    """The recipe's keyword arguments from the `plan RECIPE` options."""
    from recipes.lvmcache import CacheSpec

    if args.recipe in ("lvmcache-attach", "writecache-attach"):
        spec = _cache_spec(args) if args.recipe == "lvmcache-attach" else _writecache_spec(args)
        return {
            "lv_name": args.lv,
            "ssd_path": args.ssd,
            "spec": spec,
            "wipe": args.wipe,
            "allow_partition": args.allow_partition,
        }
    if args.recipe == "lvmcache-uncache":
        return {"lv_name": args.lv, "keep_pool": args.keep_pool, "release": args.release_ssd}
    if args.recipe == "lvmcache-new":
        return {
            "hdd_path": args.hdd,
            "ssd_path": args.ssd,
            "vg": args.vg,
            "lv": args.lv,
            "spec": CacheSpec(_size(args.size, "--size") or 0, mode=args.mode),
            "wipe": args.wipe,
        }
    if args.recipe == "lvmcache-mode":
        return {"lv_name": args.lv, "mode": args.mode}
    if args.recipe == "writecache-detach":
        return {"lv_name": args.lv, "keep_cachevol": args.keep_cachevol, "release": args.release_ssd}
    if args.recipe == "remove":
        return {"path": args.device, "release": args.release_ssd}
    if args.recipe == "bcache-create":
        return {
            "backing_path": args.backing,
            "cache_path": args.cache,
            "mode": args.mode,
            "sequential_cutoff": _size(args.sequential_cutoff, "--sequential-cutoff", 0, (1 << 32) - 1),
            "writeback_percent": args.writeback_percent,
            "wipe": args.wipe,
        }
    return {"path": args.device, "wipe_cache": args.wipe_cache}


def _writecache_spec(args: argparse.Namespace) -> Any:
    from cachewise.core import Refused
    from recipes.writecache import WritecacheSpec

    size, block = _size(args.size, "--size"), args.block_size
    if args.recommendation is not None:
        cfg = _recommended_config(args.recommendation)
        if cfg.get("backend") != "lvmcache-writecache":
            raise Refused(f"the recommendation is not a writecache ({cfg.get('backend') or 'no cache'}). {NOTHING}")
        size = size or int(cfg.get("size_bytes") or 0) or None
        block = block or cfg.get("writecache_block_size")
    if size is None:
        raise Refused(f"give the cache size (--size 8g) or a recommendation (--recommendation rec.json). {NOTHING}")
    return WritecacheSpec(
        size_bytes=size,
        block_size=block,
        high_watermark=args.high_watermark,
        low_watermark=args.low_watermark,
        writeback_jobs=args.writeback_jobs,
    )


def _recommended_config(path: Path) -> dict[str, Any]:
    """The "config" of a `recommend --json` file ({} when the advice is not to cache)."""
    from cachewise.core import Refused

    try:
        cfg = json.loads(path.read_text())["config"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Refused(f"cannot read the recommendation {path}: {exc}. {NOTHING}") from None
    return cfg if isinstance(cfg, dict) else {}


def _cache_spec(args: argparse.Namespace) -> Any:
    from cachewise.core import Refused, spec_from_config
    from recipes.lvmcache import CacheSpec

    size, chunk, meta = _size(args.size, "--size"), _size(args.chunk, "--chunk"), _size(args.metadata, "--metadata")
    if args.recommendation is not None:
        cfg = _recommended_config(args.recommendation)
        if cfg.get("mirrored_pool") and len(args.ssd) != 2 and (args.mode or cfg.get("mode")) == "writeback":
            raise Refused(
                "the recommendation is writeback on a cache mirrored across two SSDs (LVM raid1); name both "
                f"with --ssd A --ssd B, or choose --mode writethrough for one. {NOTHING}"
            )
        return spec_from_config(cfg, size, chunk, meta, args.mode)
    if size is None:
        raise Refused(f"give the cache size (--size 40g) or a recommendation (--recommendation rec.json). {NOTHING}")
    return CacheSpec(size_bytes=size, mode=args.mode or "writethrough", chunk_bytes=chunk, metadata_bytes=meta)


def cmd_apply(args: argparse.Namespace) -> int:
    from advisor.apply.run import ApplyError
    from cachewise.core import is_root
    from cachewise.render import event_line

    if not is_root():
        return _error(f"applying a plan changes disks and needs root; run it with sudo. {NOTHING}")
    core = _core(args)
    if args.abandon is not None:
        return _abandon(core, args.abandon)
    pending = core.pending()
    damaged = next((j for j in pending if j.problem()), None)
    if damaged is not None:
        return _error(
            f"{damaged.problem()}. {NOTHING} Look at it, then set it aside with `cachewise apply --abandon "
            f"{damaged.path}` (the steps it ran stay as they are)."
        )
    journal = None
    if args.resume or args.rollback:
        if not pending:
            return _error(f"there is no interrupted plan to {'resume' if args.resume else 'roll back'}. {NOTHING}")
        journal = pending[-1]
        plan = journal.plan
    elif pending:
        return _error(
            f"an earlier plan was interrupted ({pending[-1].path.name}): run `cachewise apply --resume` to "
            f"finish it, `cachewise apply --rollback` to undo it, or `cachewise apply --abandon "
            f"{pending[-1].path}` to leave it as it is. {NOTHING}"
        )
    elif args.plan is None:
        return _error(f"name the plan to apply (cachewise apply plan.json). {NOTHING}")
    else:
        plan = core.load_plan(args.plan)

    def report(e: Event) -> None:
        if not args.json:
            print(event_line(e), file=sys.stderr, flush=True)

    try:
        outcome = core.apply_checked(plan, lambda p: _confirm(p, args.yes), report, journal, rollback=args.rollback)
    except ApplyError as exc:
        if args.json:
            _print_json({"outcome": "stopped", "message": str(exc)})
        return _error(str(exc))
    result: dict[str, object] = {"outcome": outcome, "plan": plan.kind}
    if plan.kind == "bcache-create" and outcome == "done":
        result["bcache_device"] = core.bcache_device(plan)
    if args.json:
        return _print_json(result)
    print(f"{plan.title}: {outcome}.")
    if result.get("bcache_device"):
        print(f"The bcache device: {result['bcache_device']} (use this path; bcacheN numbers change between boots)")
    return 0


def _abandon(core: Core, path: Path) -> int:
    """Show what the journal's plan did, then record that it is abandoned."""
    from advisor.apply.journal import Journal

    journal = Journal(path)
    problem = journal.problem() if path.is_file() else f"{path} is not a journal file"
    what = problem or f"{journal.plan.title}; steps that ran: {', '.join(journal.steps_run()) or 'none'}"
    core.abandon(path)
    print(f"Abandoned {path}: {what}. Nothing else was changed; the system stays as those steps left it.")
    return 0


def _confirm(plan: Plan, yes: bool) -> bool:
    """The user types the target device's name after seeing the preview (or passed --yes)."""
    from cachewise.core import Refused
    from cachewise.render import plan_preview

    if yes:
        return True
    if not sys.stdin.isatty():
        raise Refused(f"applying changes disks; pass --yes to confirm without a terminal. {NOTHING}")
    _print(plan_preview(plan))
    return input(f"Type the device name to confirm ({plan.target}): ").strip() == plan.target


def _prometheus(path: Path | None, samples: list[Sample]) -> None:
    from advisor.watch.export import prometheus_text, write_textfile
    from cachewise.core import Refused

    if path is None:
        return
    try:
        write_textfile(path, prometheus_text(samples))
    except OSError as exc:
        raise Refused(
            f"cannot write {path} ({exc.strerror or exc}); the samples were read but not exported. "
            "Choose a writable folder (node_exporter's textfile directory)."
        ) from None


def _check_export(path: Path | None) -> None:
    from cachewise.core import Refused

    if path is not None and not (path.parent.is_dir() and os.access(path.parent, os.W_OK | os.X_OK)):
        raise Refused(f"the folder of {path} is missing or not writable; nothing was read. Choose another place.")


def cmd_completion(args: argparse.Namespace) -> int:
    from cachewise.completion import SHELLS

    sys.stdout.write(SHELLS[args.shell](build_parser()))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    _check_export(args.prometheus)
    core = _core(args)
    rows = core.status()
    _prometheus(args.prometheus, [s for _, s in rows if s is not None])
    if not rows and not args.json:
        print("No dm-cache (lvmcache), dm-writecache or bcache device on this machine.")
        return 0
    if args.json:
        return _print_json(
            {
                "schema": "cachewise.status/1",
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
            }
        )
    from cachewise.render import status_table

    _print(status_table(rows))
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    import time

    from cachewise.render import stall_text, watch_line

    seconds = None
    if args.duration is not None:
        try:
            seconds = parse_duration(args.duration)
        except UnitError as exc:
            return _error(f"--duration: {exc}; nothing was read.")
    _check_export(args.prometheus)
    core = _core(args)
    ref = core.watch_target(args.target)
    watch = core.watch([ref], record=not args.no_record, stall_seconds=args.stall_after)
    start = time.monotonic()
    taken, stalled, code = 0, False, 0
    try:
        while True:
            step = watch.step()
            if not step:  # uncached, detached, or the device went away
                print(
                    f"{ref.name} is no longer a cache on this machine.",
                    flush=True,
                    file=sys.stderr if args.json_lines else sys.stdout,
                )
                return 0 if args.until_clean else 1
            for sample, fig in step:
                taken += 1
                if args.json_lines:
                    print(
                        json.dumps(
                            {"schema": "cachewise.watch/1", "sample": sample.to_json(), "figures": fig.to_json()}
                        ),
                        flush=True,
                    )
                else:
                    print(time.strftime("%H:%M:%S ", time.localtime(sample.t)) + watch_line(fig), flush=True)
                if fig.stall is not None and not stalled:
                    print(stall_text(fig), file=sys.stderr if args.json_lines else sys.stdout, flush=True)
                stalled = fig.stall is not None
                _prometheus(args.prometheus, [sample])
                # bcache says "dirty" until its writeback thread has finished, after dirty_data is 0.
                if args.until_clean and not fig.dirty_bytes and fig.state != "dirty":
                    if not args.json_lines:
                        print(f"{fig.target}: clean, no dirty data left.")
                    return 0
            if (
                not watch.trackers
                or (args.count and taken >= args.count)
                or (seconds is not None and time.monotonic() - start >= seconds)
            ):
                break
            time.sleep(max(0.0, args.interval - (time.monotonic() - start) % args.interval))
    except KeyboardInterrupt:
        code = 130
    finally:
        _warn(watch.flush())
    return code


def cmd_history(args: argparse.Namespace) -> int:
    from advisor.history import History, HistoryError

    try:
        with History.open_default(args.state_dir) as hist:
            rows = hist.snapshots(args.limit)
            path = hist.path
    except HistoryError as exc:
        return _error(str(exc))
    if args.json:
        return _print_json({"database": str(path), "snapshots": [r.__dict__ for r in rows]})
    print(f"history database: {path}")
    for r in rows:
        print(f"#{r.id}  {r.taken_at}  {r.hostname}  {r.device_count} devices  udev {r.udev}")
    if not rows:
        print("no snapshots yet; `cachewise scan` records one.")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    if not sys.stdout.isatty():
        return _error("the terminal UI needs a terminal; use a subcommand such as `cachewise scan --json` in scripts.")
    from screens.app import CachewiseApp

    core = _core(args)
    target = getattr(args, "watch", None)  # absent when `tui` was not named (the default command)
    watch = core.watch_target(target) if target else None
    CachewiseApp(core, watch_hotplug=core.live, watch=watch, start=True).run()
    return 0
