"""`cachewise tunables`: bcache's tunables cachewise keeps under /etc/cachewise/bcache, set again
(by hand, or by the package's udev rule with --udev) and shown beside their live values; and the
lines `scan` and `status` print for tunables that drifted."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import syslog
from collections.abc import Iterable
from types import FrameType
from typing import Any

from rich.table import Table

from advisor import tunables as files
from advisor.errors import CachewiseError
from advisor.health.findings import Finding
from advisor.tunables import Applied
from cachewise.cli import common
from cachewise.cli.output import error, print_json, show
from cachewise.cli.phrases import word
from cachewise.core import tunables

SCHEMA = "cachewise.tunables/1"
# Run by udev: the kernel links bcacheN to its backing device just after the uevent, so the
# device is looked for again for up to UDEV_WAIT seconds; the whole run ends within UDEV_LIMIT
# seconds whatever happens (the rule's `timeout` kills it later still), so udev never waits long.
UDEV_WAIT = 5.0
UDEV_LIMIT = 15


def cmd_tunables(args: argparse.Namespace) -> int:
    if args.tunables_command == "apply":
        return _udev(args) if args.udev else _apply(args)
    return _show(args)


def _sudo() -> str:
    return "sudo " if os.geteuid() != 0 else ""


def finding_line(f: Finding) -> str:
    """A finding of advisor/health/tunables.py as scan and status print it: what, and the fix."""
    fix = f.fix
    if fix is None:
        return f"{f.what}."
    if fix.command and fix.command[0] == "cachewise":
        return f"{f.what}: re-apply with `{_sudo()}{shlex.join(fix.command)}`."
    if fix.command:
        return f"{f.what}; {fix.how} (`{shlex.join(fix.command)}`)."
    return f"{f.what}; {fix.how}."


def drift_lines(findings: Iterable[Finding]) -> list[str]:
    return [finding_line(f) for f in findings]


def _changes(a: Applied) -> str:
    said = []
    for c in a.changes:
        if c.error:
            said.append(f"{c.key} not set ({c.error})")
        elif c.changed:
            said.append(f"{c.key} {c.before} -> {c.after}")
        else:
            said.append(f"{c.key} {c.after} (already)")
    return ", ".join(said)


def _applied_line(a: Applied) -> str:
    name = a.backing.shown_name
    if a.configured is None:
        return (
            f"{name} has no tunables file ({files.path_of(a.backing.uuid)}); nothing to set. cachewise writes one "
            "when it makes the cache."
        )
    return f"{name}: {_changes(a)}, from {a.configured.path}"


def _apply(args: argparse.Namespace) -> int:
    outcome = tunables.apply(common.core_for(args), args.device)
    failed = [e for e in (files.not_set(a) for a in outcome.applied) if e is not None]
    if args.json:
        print_json(
            {
                "schema": SCHEMA,
                "action": "apply",
                "devices": [a.to_json() for a in outcome.applied],
                "refused": [_refusal(e) for e in outcome.refused],
                "errors": [word(e) for e in failed],
            }
        )
    else:
        for a in outcome.applied:
            print(_applied_line(a))
        if not outcome.applied and not outcome.refused:
            print(f"No bcache device on this machine has a tunables file in {files.CONFIG_DIR}.")
    for e in (*outcome.refused, *failed):
        if not args.json:
            error(word(e))
    return 1 if outcome.refused or failed else 0


def _refusal(e: CachewiseError) -> dict[str, Any]:
    return {"file": str(e.facts.get("path", "")), "why": str(e.facts.get("why", "")), "what": word(e)}


class _GaveUp(Exception):
    pass


def _give_up(_signum: int, _frame: FrameType | None) -> None:
    raise _GaveUp


def _udev(args: argparse.Namespace) -> int:
    """As udev's RUN program: log to the system log, print nothing, end within UDEV_LIMIT s."""
    syslog.openlog("cachewise", syslog.LOG_PID, syslog.LOG_DAEMON)
    signal.signal(signal.SIGALRM, _give_up)
    signal.alarm(UDEV_LIMIT)
    device = args.device or "?"
    try:
        if args.device is None:
            raise CachewiseError("bad-option", option="--udev", why="needs --device")
        outcome = tunables.apply(common.core_for(args), args.device, wait=UDEV_WAIT)
        for a in outcome.applied:
            if a.configured is not None:
                syslog.syslog(syslog.LOG_INFO, f"tunables of {device}: {_applied_line(a)}")
            failed = files.not_set(a)
            if failed is not None:
                syslog.syslog(syslog.LOG_ERR, f"tunables of {device}: {word(failed)}")
                return 1
        return 0
    except CachewiseError as exc:
        if exc.code == "tunables-no-device":  # a flash-only volume: bcache's, but no backing device
            syslog.syslog(syslog.LOG_DEBUG, f"tunables of {device}: {word(exc)}")
            return 0
        syslog.syslog(syslog.LOG_ERR, f"tunables of {device}: {word(exc)}")
        return 1
    except _GaveUp:
        syslog.syslog(syslog.LOG_ERR, f"tunables of {device}: gave up after {UDEV_LIMIT} s; nothing more was set")
        return 1
    finally:
        signal.alarm(0)


def _show(args: argparse.Namespace) -> int:
    shown = tunables.show(common.core_for(args))
    if args.json:
        return print_json(
            {
                "schema": SCHEMA,
                "action": "show",
                "config_dir": str(files.CONFIG_DIR),
                "files": [
                    {
                        "uuid": conf.uuid,
                        "file": str(conf.path),
                        "settings": conf.values,
                        "device": backing.device if backing else None,
                        "backing": backing.name if backing else None,
                        "live": backing.live if backing else None,
                    }
                    for conf, backing in shown.files
                ],
                "refused": [_refusal(e) for e in shown.refused],
                "findings": [f.to_json() for f in shown.findings],
            }
        )
    if not shown.files and not shown.refused:
        print(f"No tunables file in {files.CONFIG_DIR}: cachewise writes one when it makes a bcache cache.")
        return 0
    table = Table(title_justify="left")
    for column in ("device", "setting", "configured", "live", "file"):
        table.add_column(column, no_wrap=column != "file")
    for conf, backing in shown.files:
        for key, value in conf.values.items():
            live = backing.live.get(key, "?") if backing else "not here"
            table.add_row(
                backing.shown_name if backing else conf.uuid,
                key,
                files.kernel_text(key, value),
                live,
                str(conf.path),
            )
    show(table, wide=args.wide)
    for line in drift_lines(shown.findings):
        print(f"note: {line}")
    return 0
