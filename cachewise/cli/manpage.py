"""cachewise(8), generated from the argparse definitions (`python -m cachewise.cli.manpage`).

The options and their help come from `cachewise.cli.parser.build_parser()` alone, so the man page cannot
drift from the program; only the sections argparse has no place for (files, environment, exit
status, see also) are written here. The Debian package builds the page with this module.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Iterator

from cachewise import __version__
from cachewise.cli.parser import build_parser

SECTION = "8"

# What argparse cannot say: where cachewise keeps things, what it reads from the environment.
FILES = [
    (
        "/var/lib/cachewise/history.sqlite3",
        "The history database when run as root: scans, probes, analyses, watch samples "
        "(a normal user's is $XDG_STATE_HOME/cachewise/history.sqlite3).",
    ),
    (
        "/var/lib/cachewise/journal/",
        "One journal per applied plan; an interrupted plan is resumed, rolled back or abandoned from it.",
    ),
]
ENVIRONMENT = [
    ("CACHEWISE_STATE_DIR", "Where the history database and the journals live (as --state-dir)."),
    ("XDG_STATE_HOME", "The base of a normal user's state directory (default ~/.local/state)."),
]
EXIT_STATUS = [
    ("0", "Success."),
    ("1", "A refusal or an error: the message says what happened, that nothing was changed, and what to do."),
    ("2", "The command line could not be parsed."),
    ("130", "Interrupted (Ctrl-C, SIGTERM or SIGHUP); an apply finishes its current step first."),
]
SEE_ALSO = ["lvmcache(7)", "lvconvert(8)", "make-bcache(8)", "fio(1)", "blktrace(8)", "smartctl(8)"]


def escape(text: str) -> str:
    """Text for a roff line: backslashes and hyphens escaped, no line taken for a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line[:1] in (".", "'") else line for line in text.splitlines())


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return parser._get_formatter()._expand_help(action)


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order they were defined."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            out += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return out


def _invocation(action: argparse.Action) -> str:
    """`\\fB\\-\\-size\\fR \\fISIZE\\fR` for an option, `\\fIDEVICE\\fR` for a positional."""
    if not action.option_strings:
        return f"\\fI{escape(action.metavar or action.dest)}\\fR"  # type: ignore[arg-type]
    names = ", ".join(f"\\fB{escape(o)}\\fR" for o in action.option_strings)
    if action.nargs == 0:
        return names
    if action.choices is not None and action.metavar is None:
        value = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        value = str(action.metavar or action.dest.upper())
    return f"{names} \\fI{escape(value)}\\fR"


def _options(parser: argparse.ArgumentParser, *, top: bool = False) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._HelpAction) and not top:
            continue  # every command has -h; the page says it once
        yield ".TP"
        yield _invocation(action)
        yield escape(_help(parser, action)) or "\\&"


def _usage(parser: argparse.ArgumentParser) -> str:
    usage = parser.format_usage().strip()
    return " ".join(usage.removeprefix("usage: ").split())


def render(parser: argparse.ArgumentParser, *, date: datetime.date | None = None) -> str:
    """The whole man page as roff (man macros)."""
    # SOURCE_DATE_EPOCH (reproducible builds) fixes the date a package build writes.
    if date is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        date = datetime.datetime.fromtimestamp(int(epoch), datetime.UTC).date() if epoch else datetime.date.today()
    prog = parser.prog
    lines = [
        f'.TH {prog.upper()} {SECTION} "{date.isoformat()}" "{prog} {__version__}" "System Administration"',
        ".SH NAME",
        f"{prog} \\- {escape('advice and guided recipes for SSD caches (lvmcache, bcache) in front of hard disks')}",
        ".SH SYNOPSIS",
        f"\\fB{prog}\\fR [\\fIOPTIONS\\fR]",
        ".br",
        f"\\fB{prog}\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]",
        ".SH DESCRIPTION",
        escape(parser.description or ""),
        ".PP",
        escape(
            "Every command that changes disks works from a plan: `cachewise plan` prints the exact commands "
            "and what they destroy without running anything; `cachewise apply` runs a saved plan after checking "
            "the devices are still the ones it was made for, asks for the device's name to be typed, and "
            "journals every step so an interrupted run can be resumed or rolled back. scan, probe (read-only "
            "fio), trace, analyze, recommend, status, watch and history change nothing."
        ),
        ".SH OPTIONS",
        *_options(parser, top=True),
        ".SH COMMANDS",
    ]
    for name, summary, sub in subcommands(parser):
        lines += [
            ".SS " + escape(f"{prog} {name}"),
            escape(summary[:1].upper() + summary[1:] + "."),
            ".PP",
            f".B {escape(_usage(sub))}",
        ]
        if sub.description:
            lines += [".PP", escape(sub.description)]
        lines += list(_options(sub))
        for rname, rsummary, rsub in subcommands(sub):
            lines += [
                ".PP",
                f"\\fB{escape(f'{prog} {name} {rname}')}\\fR: {escape(rsummary)}.",
                ".PP",
                f".B {escape(_usage(rsub))}",
            ]
            if rsub.description:
                lines += [".PP", escape(rsub.description)]
            lines += [".RS", *_options(rsub), ".RE"]
    lines += [".PP", escape("Every command takes -h (--help) for its own usage.")]
    for title, rows in (("FILES", FILES), ("ENVIRONMENT", ENVIRONMENT), ("EXIT STATUS", EXIT_STATUS)):
        lines.append(f".SH {title}")
        for key, text in rows:
            lines += [".TP", f"\\fB{escape(key)}\\fR", escape(text)]
    lines += [".SH SEE ALSO", ", ".join(f"\\fB{escape(p.split('(')[0])}\\fR({p.split('(')[1]}" for p in SEE_ALSO)]
    return "\n".join(lines) + "\n"


def reference_table(parser: argparse.ArgumentParser) -> str:
    """The README's CLI reference: a Markdown table of every command and recipe with its help.
    (`python -m cachewise.manpage --markdown`; a test keeps the README's copy equal to it.)"""
    rows = ["| Command | What it does |", "| --- | --- |"]
    for name, summary, sub in subcommands(parser):
        rows.append(f"| `{parser.prog} {name}` | {summary.replace('|', '/')} |")
        for rname, rsummary, _ in subcommands(sub):
            rows.append(f"| `{parser.prog} {name} {rname}` | {rsummary.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    markdown = "--markdown" in (sys.argv[1:] if argv is None else argv)
    sys.stdout.write((reference_table if markdown else render)(build_parser()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
