"""What several commands share: the core for this machine or a snapshot, and values that the
parser takes as text (sizes, durations)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from advisor.errors import CachewiseError, codes, next_step
from advisor.outputs import Unsafe
from advisor.units import UnitError, parse_size
from advisor.watch.textfile import export_problem, write_textfile
from cachewise.core import Core, Refused, load_snapshot

codes({"bad-option": "{option}: {why}"}, front_end=True)
codes(
    {
        "export-unwritable": "cannot write {path} ({why}); the samples were read but not exported",
        "export-folder": "the folder of {path} is missing or not writable; nothing was read",
        "export-refused": "cannot export to {path}: {why}; nothing was read",
    },
    front_end=True,
)


class BadOption(CachewiseError):
    """A value given on the command line is not what its option takes."""

    def __init__(self, option: str, why: object) -> None:
        super().__init__("bad-option", option=option, why=why)


def core_for(args: argparse.Namespace) -> Core:
    """The core for this machine, or for the raw snapshot given with --from-raw."""
    raw: Path | None = getattr(args, "from_raw", None)
    if raw:
        return Core.for_snapshot(load_snapshot(raw), args.state_dir)
    return Core.for_machine(args.state_dir)


def size(text: str | None, option: str, minimum: int = 1, maximum: int = 1 << 60) -> int | None:
    try:
        return parse_size(text, minimum, maximum) if text is not None else None
    except UnitError as exc:
        raise BadOption(option, exc.what) from None


def write_prometheus(path: Path, text: str) -> None:
    """The node_exporter textfile (``--prometheus FILE`` of status, watch and doctor)."""
    try:
        write_textfile(path, text)
    except Unsafe as exc:
        raise Refused(
            "export-unwritable", changed=True, path=path, why=exc.why, next=[next_step("choose-output")]
        ) from None
    except OSError as exc:
        raise Refused(
            "export-unwritable", changed=True, path=path, why=exc.strerror or exc, next=[next_step("choose-output")]
        ) from None


def check_export(path: Path | None) -> None:
    """Refuse ``--prometheus FILE`` before anything is read when FILE cannot take the textfile."""
    if path is None:
        return
    if not (path.parent.is_dir() and os.access(path.parent, os.W_OK | os.X_OK)):
        raise Refused("export-folder", path=path, next=[next_step("choose-output")])
    why = export_problem(path)
    if why:
        raise Refused("export-refused", path=path, why=why, next=[next_step("choose-output")])
