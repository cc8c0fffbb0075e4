"""What several commands share: the core for this machine or a snapshot, and values that the
parser takes as text (sizes, durations)."""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.errors import CachewiseError, codes
from advisor.units import UnitError, parse_size
from cachewise.core import Core, load_snapshot

codes({"bad-option": "{option}: {why}"}, front_end=True)


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
