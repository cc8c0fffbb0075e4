"""`cachewise doctor`: what is wrong with the caches, each finding with its cause and its fix,
with an exit code for scripts (0 nothing or notes only, 1 a warning, 2 something critical, 3
doctor could not look), as text, JSON, journal lines or a node_exporter textfile."""

from __future__ import annotations

import argparse
import shlex
import textwrap
import time
from typing import Any

from advisor.errors import CachewiseError
from advisor.health.doctor import Report, Settings
from advisor.health.export import DoctorCollector
from advisor.health.findings import Finding, Fix
from advisor.units import UnitError, parse_duration
from advisor.watch.export import SamplesCollector, registry, textfile
from cachewise.cli import common
from cachewise.cli.output import error, print_json, warn
from cachewise.cli.parser import flag
from cachewise.cli.phrases import word
from cachewise.core.doctor import Checkup, DoctorRequest, doctor

# doctor's exit code when it could not look at all (a bad target, an unreadable snapshot): the
# monitoring plugins' UNKNOWN, apart from the 1 and 2 its findings give.
CANNOT_LOOK = 3
# syslog priorities of the journal's lines (systemd reads a "<N>" prefix on a service's output).
PRIORITY = {"critical": 2, "warning": 4, "info": 6}


def fix_command(fix: Fix) -> str:
    """The command that carries out a fix: the plan's `cachewise plan` line, or the command."""
    if fix.plan:
        argv = ["cachewise", "plan", fix.plan]
        for key, value in fix.options.items():
            if value is True:
                argv.append(flag(key))
            elif value not in (None, False, (), []):
                argv += [flag(key), str(value)]
        for key in fix.needs:  # the admin's choice: a placeholder in capitals, as a man page writes it
            argv += [flag(key), f"NEW_{key.upper()}"]
        return shlex.join([*argv, "-o", f"{fix.plan}.json"])
    return shlex.join(fix.command) if fix.command else ""


def block(f: Finding, width: int = 100) -> str:
    """One finding as a block: the severity and subject with what was found, its cause, its fix."""
    wrap = textwrap.TextWrapper(width=width, subsequent_indent="       ", break_on_hyphens=False)
    lines = wrap.wrap(f"{f.severity.upper()} {f.subject}: {f.what}.")
    if f.cause:
        lines += wrap.wrap(f"  Cause: {f.cause}.".replace("..", "."))
    if f.fix is not None:
        lines += wrap.wrap(f"  Fix: {f.fix.how}.")
        command = fix_command(f.fix)
        if command:
            lines.append(f"       {command}")
    return "\n".join(lines)


def journal_line(f: Finding) -> str:
    """One finding on one line, with its syslog priority for the journal."""
    fix = f" Fix: {f.fix.how}." if f.fix else ""
    command = fix_command(f.fix) if f.fix else ""
    return (
        f"<{PRIORITY[f.severity]}>{f.severity.upper()} {f.subject}: {f.what}. Cause: {f.cause}.{fix}"
        + (f" ({command})" if command else "")
    ).replace("..", ".")


def summary(report: Report) -> str:
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in ("critical", "warning", "info")}
    caches = f"{len(report.caches)} cache{'s' if len(report.caches) != 1 else ''}"
    ssds = f"{len(report.ssds)} SSD{'s' if len(report.ssds) != 1 else ''}"
    if not report.findings:
        return f"No findings: {caches} and {ssds} looked at, nothing wrong."
    found = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return f"{found} ({caches}, {ssds} looked at)."


def report_json(report: Report) -> dict[str, Any]:
    """doctor --json (schema cachewise.doctor/1)."""
    return {
        "schema": "cachewise.doctor/1",
        "worst": report.worst,
        "exit_code": report.exit_code,
        "live": report.live,
        "findings": [f.to_json() for f in report.findings],
        "caches": [c.to_json() for c in report.caches],
        "ssds": [s.to_json() for s in report.ssds],
        "unread": [{"what": what, "why": why} for what, why in report.unread],
    }


def _settings(args: argparse.Namespace) -> Settings:
    try:
        stuck = parse_duration(args.stuck_after)
    except UnitError as exc:
        raise common.BadOption("--stuck-after", exc.what) from None
    if not 0 <= args.dirty_above <= 100:
        raise common.BadOption("--dirty-above", f"must be a percentage from 0 to 100, not {args.dirty_above:g}")
    return Settings(stuck_seconds=stuck, dirty_share=args.dirty_above / 100)


def cmd_doctor(args: argparse.Namespace) -> int:
    try:
        common.check_export(args.prometheus)
        request = DoctorRequest(args.target, _settings(args), record=not args.no_record)
        checkup = doctor(common.core_for(args), request)
        _export(args, checkup)
    except CachewiseError as exc:
        error(word(exc))
        return CANNOT_LOOK
    report = checkup.report
    for warning in checkup.warnings:
        warn(warning)
    if args.json:
        print_json(report_json(report))
    elif args.journal:
        for f in report.findings:
            print(journal_line(f), flush=True)
        if not report.findings:
            print(f"<6>{summary(report)}", flush=True)
    else:
        for f in report.findings:
            print(block(f) + "\n")
        print(summary(report))
    return report.exit_code


def _export(args: argparse.Namespace, checkup: Checkup) -> None:
    if args.prometheus is None:
        return
    memory = checkup.look.memory_bytes
    metrics = registry(SamplesCollector(checkup.samples), DoctorCollector(checkup.report, time.time(), memory))
    common.write_prometheus(args.prometheus, textfile(metrics))
