"""What every command prints with: JSON, rich renderables, errors and warnings on stderr."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from typing import Any, TextIO

from rich.console import Console

from advisor.errors import CachewiseError
from advisor.watch.session import Tick
from cachewise.cli.phrases import word
from cachewise.render import stall_text, watch_line


class OutputLost(Exception):
    """Standard output cannot be written (closed, on a full disk, a device that fails)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class _Guarded(io.TextIOBase):
    """Standard output whose write errors are :class:`OutputLost` (a closed pipe stays
    BrokenPipeError, which the caller answers quietly), and which never raises for a character
    the terminal's encoding lacks: it is replaced."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="replace")  # type: ignore[attr-defined]

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            raise OutputLost(getattr(exc, "strerror", None) or str(exc)) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            raise OutputLost(getattr(exc, "strerror", None) or str(exc)) from None

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    def writable(self) -> bool:
        return True


def guard_streams() -> str | None:
    """Make standard output safe to print to: errors become OutputLost, characters the
    terminal cannot show are replaced (on stderr too). Returns why output is impossible when
    standard output is closed (None: it is open)."""
    with contextlib.suppress(AttributeError, ValueError):
        sys.stderr.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    if sys.stdout is None:
        return "standard output is closed"
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a file (captured in memory): open by definition
        fd = -1
    if fd >= 0:
        try:
            os.fstat(fd)
        except OSError:
            return "standard output is closed"
    if not isinstance(sys.stdout, _Guarded):
        sys.stdout = _Guarded(sys.stdout)
    return None


def error(message: str) -> int:
    print(f"cachewise: {message}", file=sys.stderr)
    return 1


def warn(warning: CachewiseError | None) -> None:
    if warning is not None:
        print(f"cachewise: warning: {word(warning)}", file=sys.stderr)


def print_json(data: Any) -> int:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


# The width of --wide: none a line of a table could reach, so nothing is wrapped or cut.
WIDE = 1 << 16


def console(wide: bool = False) -> Console:
    """The console a command prints its tables on: the terminal's width; none with --wide, or
    when the output goes into a file or a pipe without COLUMNS saying how wide (a script reading
    `status` must get whole words, not rich's 80 columns of "c…")."""
    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(width=WIDE) if wide or piped else Console()


def show(renderable: Any, wide: bool = False) -> None:
    """A table or report, its lines never cropped (a path longer than the terminal is printed whole)."""
    console(wide).print(renderable, crop=False)


def print_tick(tick: Tick, json_lines: bool, notes: TextIO) -> None:
    """One tick of a watch: a line of figures for each cache (or the sample and its figures as
    JSON), a stall's causes when it begins, and the end of a flush."""
    for sample, fig in tick.figures:
        if json_lines:
            line = {"schema": "cachewise.watch/1", "sample": sample.to_json(), "figures": fig.to_json()}
            print(json.dumps(line), flush=True)
        else:
            print(time.strftime("%H:%M:%S ", time.localtime(sample.t)) + watch_line(fig), flush=True)
        if fig in tick.stalled:
            print(stall_text(fig), file=notes, flush=True)
        if tick.clean and not json_lines:
            print(f"{fig.target}: clean, no dirty data left.")
