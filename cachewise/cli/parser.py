"""The `cachewise` command line: every subcommand and option, in one parser that the man page
and the shell completions are generated from (cachewise/cli/manpage.py, completion.py).

The ``plan`` subcommands are derived from the recipes' registry (recipes/registry.py): each
recipe's options dataclass gives its flags (``release_ssd`` is ``--release-ssd``), their help,
their kind of value and whether they repeat. Nothing here knows a recipe by name.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import Any

import recipes  # noqa: F401 - registers every recipe, so each has its `plan` subcommand
from advisor.advice.workloads import workload_types
from advisor.backends import listed
from advisor.disks.probe import DEFAULT_SECONDS
from advisor.history import STATE_ENV
from cachewise import __version__
from cachewise.core.demo import SCENES
from recipes.registry import Opt, Recipe, options_of, required
from recipes.registry import recipes as all_recipes


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


WIDE_HELP = "print tables without any width limit: every line whole, however long (for wide terminals and pipes)"


def _wide(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wide", action="store_true", help=WIDE_HELP)


def _cache(action: argparse.Action) -> argparse.Action:
    """Mark an argument that names a cache (VG/LV of a cached LV, bcacheN): the completions
    offer the caches for it, not every disk."""
    action.names_cache = True  # type: ignore[attr-defined]
    return action


def names_cache(action: argparse.Action) -> bool:
    return bool(getattr(action, "names_cache", False))


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand and option; the man page and the shell completions are generated from it."""
    parser = argparse.ArgumentParser(
        prog="cachewise",
        description="Advice and guided recipes for SSD caches (lvmcache, dm-writecache, bcache) in front of hard "
        "disks. With no subcommand, opens the terminal UI.",
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
    _wide(scan)
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
    probe.add_argument(
        "devices",
        nargs="+",
        metavar="DEVICE",
        help="a device in any form scan prints: sdb, /dev/sdb, a /dev/disk/by-id/ path, VG/LV",
    )
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
    _wide(probe)

    trace = sub.add_parser(
        "trace",
        help="record a device's block I/O to a trace file (root)",
        description="Record the block I/O of a disk, partition, LV or other device-mapper device through the "
        "kernel's block tracepoints (tracefs; nothing to install). Streams to FILE with bounded memory; stops "
        "after --duration or on Ctrl-C. Analyse the result with `cachewise analyze FILE`.",
    )
    trace.add_argument("device", metavar="DEVICE", help="the device to trace: a disk, partition or LV (/dev/VG/LV)")
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

    cap = sub.add_parser(
        "capture",
        help="record a device's block I/O for days, sampled (the capture service)",
        description="Record a device's block I/O for days: requests are sampled by where they fall (SHARDS, at a "
        "rate chosen from the device's size and lowered when the budget would be overrun), written in frames a "
        "power cut cannot corrupt (at most the last minute is lost), a file per hour, with each hour's counts of "
        "every request. A capture that was cut short (a reboot) resumes in the same folder. The package ships "
        "cachewise-capture@.service and .timer, off by default. Analyse the folder with `cachewise analyze FOLDER`.",
    )
    cap_sub = cap.add_subparsers(dest="capture_command", metavar="ACTION", required=True)
    cap_start = cap_sub.add_parser(
        "start",
        help="capture DEVICE until --for has passed, or resume its unfinished capture (root)",
        description="Capture DEVICE's block I/O into --dir until --for has passed, the budget is spent or the file "
        "system holding it is nearly full; Ctrl-C, SIGTERM or SIGHUP stop it cleanly. When --dir holds this "
        "device's unfinished capture it is resumed, to its own end and at its own sampling rate.",
    )
    cap_start.add_argument("device", metavar="DEVICE", help="the device: a disk, partition or LV (/dev/VG/LV)")
    cap_start.add_argument(
        "--dir", type=Path, metavar="FOLDER", help="where the files go (default: STATE_DIR/captures/NAME)"
    )
    cap_start.add_argument("--for", dest="duration", default="7d", help="how long: 2h, 1d, 7d (default)")
    cap_start.add_argument(
        "--budget", default="200m", help="at most this much for all the capture's files (default 200m)"
    )
    _common(cap_start, json="a summary, schema cachewise.capture-run/1")
    cap_show = cap_sub.add_parser(
        "show",
        help="what a capture holds: its span, sampling, hours and any damage",
        description="Summarise a capture folder (or one of its files): the sampling rate, the span, each hour's "
        "requests, reads and writes, sequential share and new footprint, how each run ended, and any damaged tail.",
    )
    cap_show.add_argument("path", type=Path, metavar="FOLDER", help="the capture's folder, or one .cwcap file")
    _common(cap_show, json="schema cachewise.capture/1")
    cap_export = cap_sub.add_parser(
        "export",
        help="write a capture as libCacheSim's oracleGeneral binary trace",
        description="Write the capture's sampled requests as libCacheSim's oracleGeneral binary trace (one "
        "24-byte record per block touched: time, block number, block size, the index of its next request), so "
        "its other policies can be tried on the same capture. The sample's rate is printed: scale sizes by it.",
    )
    cap_export.add_argument("path", type=Path, metavar="FOLDER", help="the capture's folder, or one .cwcap file")
    cap_export.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE", help="the file to write (must not exist)"
    )
    cap_export.add_argument("--block-size", default="4k", help="the object size: 4k (default), 64k ...")
    _common(cap_export, json="a summary, schema cachewise.capture-export/1")

    analyze = sub.add_parser(
        "analyze",
        help="analyse a block trace: miss-ratio curve, hot-data ratio, mix",
        description="Analyse a block I/O trace (a cachewise trace, a fio iolog v2/v3, blkparse text, or CSV): "
        "footprint, read/write mix, sequential share, request sizes, the exact LRU miss-ratio curve from 0.1% to "
        "100% of the footprint, the hot-data ratio and a Zipf exponent.",
    )
    analyze.add_argument("trace", type=Path, metavar="TRACE", help="the trace file (`cachewise trace -o FILE`)")
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
        "block accesses, SHARDS beyond). A cachewise trace of more than 8 million requests is read in chunks, "
        "in memory bounded by its footprint: once by SHARDS, twice exactly; a progress line shows on a terminal",
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
    replay_p.add_argument("trace", type=Path, metavar="TRACE", help="the trace file to replay")
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
        description=f"Recommend {listed()} to cache the slow device with the fast one(s), or no cache; "
        "the cache size from the workload's miss-ratio curve; writethrough or writeback; chunk, "
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
    for recipe in all_recipes():
        _recipe_parser(plan_sub, recipe)

    apply_p = sub.add_parser(
        "apply",
        help="run a saved plan, journaled; or resume or roll back an interrupted one",
        description="Run a plan saved with `cachewise plan ... -o FILE`. The devices must be the ones the plan was "
        "made for. Each step is journaled, so an interrupted run can be resumed (--resume) or undone (--rollback).",
    )
    apply_p.add_argument(
        "plan", nargs="?", type=Path, metavar="PLAN", help="the plan file (`cachewise plan ... -o FILE`)"
    )
    apply_p.add_argument("--yes", action="store_true", help="do not ask (needed without a terminal)")
    apply_p.add_argument(
        "--plan-from-elsewhere",
        action="store_true",
        help="apply a plan made on another host or from a saved snapshot (its devices are still checked here)",
    )
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
        description=f"Read every {listed('and')} device on this machine once: "
        "mode, state, fill, hit ratio since it started, dirty data, and its slow and fast devices. Changes nothing.",
    )
    _common(status, json="schema cachewise.status/1")
    status.add_argument(
        "--prometheus",
        type=Path,
        metavar="FILE",
        help="also write a node_exporter textfile (written beside FILE and renamed over it)",
    )
    _wide(status)

    watch = sub.add_parser(
        "watch",
        help="follow a cache live: warm-up, hit ratio, IOPS, dirty data and flushes",
        description="Sample a cache every --interval seconds: fill and fill rate, hit ratio per interval and since "
        "the start (against the recommendation's prediction when cachewise made the cache), I/O served by the "
        "cache and by the slow device, dirty data with its rate and time left, and a stalled flush with its "
        "likely causes. Samples go to the history database. Stops on Ctrl-C, after --count or --duration, or "
        "with --until-clean once no dirty data is left. Changes nothing.",
    )
    _cache(
        watch.add_argument(
            "target", metavar="TARGET", help="a cached LV (VG/LV or /dev/VG/LV), or bcacheN or its backing device"
        )
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

    doctor = sub.add_parser(
        "doctor",
        help="what is wrong with the caches: failed, degraded, stuck flushes, SSD wear; exit 0, 1 or 2",
        description="Look at every cache on this machine (or TARGET alone) and the SSDs under it, and say what is "
        "wrong, each finding with its cause and its fix (a plan to make, or a command): a failed cache, metadata "
        "read-only or marked needs_check, a mirror missing an SSD, I/O errors, dirty data that has stayed high "
        "without going down, a dm-writecache taking too much kernel memory, an SSD wearing out (SMART's share of "
        "its endurance used, and the days left at the write rate the watch measured). Without root it says what "
        "it could not read. Each run records the caches' samples, which the next run judges a flush by. Exit "
        "status, for scripts: 0 nothing found (or notes only), 1 a warning, 2 something critical, 3 doctor "
        "could not look (the message says why). Changes nothing.",
    )
    _cache(
        doctor.add_argument(
            "target",
            nargs="?",
            metavar="TARGET",
            help="one cache to look at (VG/LV, bcacheN or its backing device); default: every cache",
        )
    )
    _common(
        doctor,
        json="schema cachewise.doctor/1: the findings with their facts, cause and fix, and each cache's and SSD's "
        "numbers",
        raw="look at a raw snapshot saved with `scan --save-raw` (what discovery saw: no live status or SMART)",
    )
    doctor.add_argument(
        "--journal",
        action="store_true",
        help="one line per finding, prefixed with its syslog priority (<2> critical, <4> warning, <6> info) for "
        "systemd's journal (the cachewise-doctor service)",
    )
    doctor.add_argument(
        "--prometheus",
        type=Path,
        metavar="FILE",
        help="also write a node_exporter textfile: the caches' samples and doctor's gauges (written beside FILE "
        "and renamed over it)",
    )
    doctor.add_argument(
        "--stuck-after",
        default="1h",
        metavar="TIME",
        help="dirty data that has not gone down for this long is stuck (default 1h; 24 hours make it critical)",
    )
    doctor.add_argument(
        "--dirty-above",
        type=float,
        default=20.0,
        metavar="PERCENT",
        help="stuck dirty data counts when it fills at least this share of the cache, in percent (default 20; at "
        "least what bcache's writeback_percent or dm-writecache's high watermark keep dirty on purpose)",
    )
    doctor.add_argument("--no-record", action="store_true", help="do not record the samples in the history database")

    rc = sub.add_parser(
        "recheck",
        help="does a cache still fit its workload: keep, grow, shrink, change mode or remove, with the plan",
        description="Re-check a cache after it was made: the read hit ratio the kernel counted since it warmed up "
        "(the samples watch and doctor recorded, and one read now) against what it was predicted to do, and, with "
        "--trace, against a trace or capture of the same days, whose curve says what another size would serve. "
        "It says keep, grow, shrink, change the mode, remove, or that it cannot judge yet (with the range the "
        "counters allow), each reason with its source, and makes the plan that carries it out (an lvmcache is "
        "resized by taking its cache off, dirty blocks written back first, and attaching one of the new size). "
        "Exit status: 0 keep, 1 a change advised, 3 could not look, 4 can't judge yet. Changes nothing.",
    )
    _cache(rc.add_argument("target", metavar="TARGET", help="the cache: VG/LV, bcacheN or its backing device"))
    rc.add_argument(
        "--trace",
        type=Path,
        metavar="PATH",
        help="a trace or capture folder of the cache's workload over the same days (cachewise capture, trace)",
    )
    rc.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="save the plan that carries the verdict out (must not exist)"
    )
    _common(
        rc,
        json="schema cachewise.recheck/1: the verdict, its reasons and numbers, and the plan",
        record="the sample read now",
    )

    tun = sub.add_parser(
        "tunables",
        help="bcache tunables the kernel forgets at boot, kept in /etc/cachewise: show them, or set them again",
        description="bcache keeps its cache mode on the disk but forgets sequential_cutoff and writeback_percent at "
        "every boot. A bcache-create plan keeps them in /etc/cachewise/bcache/UUID.conf (UUID: the backing device's "
        "bcache UUID), and the package's udev rule sets them again whenever the device appears. `show` lists each "
        "file beside the live values; `apply` sets them again now. See docs/tunables.md.",
    )
    tun_sub = tun.add_subparsers(dest="tunables_command", metavar="ACTION", required=True)
    tun_apply = tun_sub.add_parser(
        "apply",
        help="set bcache's tunables again from their files (root)",
        description="Write each bcache device's sequential_cutoff and writeback_percent from its file under "
        "/etc/cachewise/bcache to sysfs, and say what changed. Only a regular file of root's that no one else can "
        "write, holding only those settings, is used.",
    )
    _cache(
        tun_apply.add_argument(
            "--device",
            metavar="DEV",
            help="only this device: bcacheN, /dev/bcacheN, /dev/bcache/by-uuid/UUID or its backing device "
            "(default: every bcache device that has a file)",
        )
    )
    _common(tun_apply, json="what was set, schema cachewise.tunables/1")
    tun_apply.add_argument(
        "--udev",
        action="store_true",
        help="as the udev rule runs it: wait up to 5 s for the device, log to the system log instead of printing, "
        "and stop within 15 s",
    )
    tun_show = tun_sub.add_parser(
        "show",
        help="each tunables file beside the live values, and what drifted",
        description="List each file under /etc/cachewise/bcache with the device it is for and the kernel's live "
        "values, and say which differ. Changes nothing.",
    )
    _common(tun_show, json="schema cachewise.tunables/1")
    _wide(tun_show)

    hist = sub.add_parser(
        "history",
        help="list recorded discovery snapshots; show one, or what changed between two",
        description="List the discovery snapshots recorded in the history database, newest first; a snapshot "
        "with the same devices and facts as the one before it says which one it repeats. `history show ID` "
        "shows one as scan does, `history diff ID [ID2]` what changed since it.",
    )
    _common(hist, json="the snapshots")
    hist.add_argument("--limit", type=_count, default=20, help="how many snapshots (default 20)")
    _wide(hist)
    hist_sub = hist.add_subparsers(dest="history_command", metavar="ACTION")
    hist_show = hist_sub.add_parser(
        "show",
        help="one recorded snapshot's devices, as scan shows them",
        description="Show the devices of one recorded discovery snapshot as `cachewise scan` shows them.",
    )
    hist_show.add_argument("id", metavar="ID", help="the snapshot's number as `history` lists it (12 or #12)")
    _common(hist_show, json="schema cachewise.scan/1, with the snapshot's number")
    hist_show.add_argument("--all", action="store_true", help="include loop, zram and empty devices")
    _wide(hist_show)
    hist_diff = hist_sub.add_parser(
        "diff",
        help="what changed between two recorded snapshots",
        description="Compare two recorded discovery snapshots device by device, by stable identity (kernel names "
        "change between boots): devices added and removed, and changes of name, size, state, role and caching. "
        "With one ID, compares it with the newest snapshot.",
    )
    hist_diff.add_argument("id", metavar="ID", help="the older snapshot's number (12 or #12)")
    hist_diff.add_argument(
        "id2", metavar="ID2", nargs="?", help="the newer snapshot's number (default: the newest snapshot)"
    )
    _common(hist_diff, json="schema cachewise.history-diff/1")

    tui = sub.add_parser("tui", help="open the terminal UI (the default)", description="Open the terminal UI.")
    _common(tui, raw="show a raw snapshot saved with `scan --save-raw` instead of this machine")
    _cache(
        tui.add_argument(
            "--watch",
            metavar="TARGET",
            help="open on the Warm-up screen of this cache (VG/LV, bcacheN or its backing device)",
        )
    )

    tui.add_argument(
        "--replay-samples",
        metavar="FILE",
        type=Path,
        help="play back samples recorded with `cachewise watch CACHE --json-lines > FILE` on the Warm-up screen "
        "(with --from-raw, over the disks of that snapshot); reads nothing of this machine",
    )

    demo = sub.add_parser(
        "demo",
        help="play caches recorded in the lab on the Warm-up screen (changes nothing)",
        description="Open the terminal UI on a cache recorded in the lab guest and played back at its own pace: "
        "the disks as they were, the Warm-up screen with the hit ratio against the prediction, dirty data "
        "counting down, a stalled flush explained. For people deciding whether to try cachewise; nothing reads, "
        "probes or changes this machine's disks.",
    )
    demo.add_argument(
        "--scene",
        choices=list(SCENES),
        default="warmup",
        help="warmup: an lvmcache made from a recommendation, warming up against its prediction; flush: a "
        "writeback bcache whose flush stalls (and why), then counts down to clean (default: warmup)",
    )
    demo.add_argument(
        "--json-lines",
        action="store_true",
        help="print the scene's samples and figures at once, one JSON object a line as `watch --json-lines` does, "
        "instead of opening the UI",
    )
    demo.add_argument("--text", action="store_true", help="print the scene at once, one line a sample as `watch` does")
    demo.add_argument(
        "--speed",
        type=float,
        default=1.0,
        metavar="N",
        help="play N times as fast as recorded, 0.25 to 20 (default 1); the figures stay the recorded ones",
    )

    comp = sub.add_parser(
        "completion",
        help="print the shell completion script for bash or zsh",
        description="Print a completion script generated from these very options. bash: "
        "`cachewise completion bash > ~/.local/share/bash-completion/completions/cachewise`; zsh: "
        "`cachewise completion zsh > ~/.zfunc/_cachewise` with ~/.zfunc on $fpath. The Debian package "
        "installs both.",
    )
    comp.add_argument("shell", choices=["bash", "zsh"], metavar="SHELL", help="bash or zsh")
    return parser


def flag(name: str) -> str:
    """The CLI flag of a recipe option's field: ``release_ssd`` -> ``--release-ssd``."""
    return "--" + name.replace("_", "-")


def _recipe_parser(plan_sub: Any, recipe: Recipe[Any]) -> None:
    """One `plan RECIPE` subcommand, from the recipe's descriptor and options dataclass."""
    p = plan_sub.add_parser(recipe.kind, help=recipe.summary, description=recipe.description)
    for f, opt in options_of(recipe.options):
        action = _recipe_option(p, f, opt)
        # A plan that changes or removes a cache names it with its one device or LV option.
        if action is not None and recipe.effect != "makes" and opt.kind in ("device", "lv") and not opt.repeat:
            _cache(action)
    if recipe.adopt is not None:
        p.add_argument(
            "--recommendation",
            type=Path,
            metavar="FILE",
            help=f"a `cachewise recommend --json` output: {recipe.adopts}",
        )
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


def _recipe_option(p: argparse.ArgumentParser, f: dataclasses.Field[Any], opt: Opt) -> argparse.Action | None:
    kwargs: dict[str, Any] = {"dest": f.name, "help": opt.help.replace("%", "%%")}
    if opt.kind == "flag":
        p.add_argument(flag(f.name), action="store_true", **kwargs)
        return None
    if opt.repeat:
        kwargs["action"] = "append"
    if opt.choices:
        kwargs["choices"] = list(opt.choices)
        if all(isinstance(c, int) for c in opt.choices):
            kwargs["type"] = int
    elif opt.kind == "number":
        kwargs["type"] = int
    if opt.metavar or opt.kind == "size":
        kwargs["metavar"] = opt.metavar or "SIZE"
    kwargs["required"] = required(f)
    return p.add_argument(flag(f.name), **kwargs)


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
