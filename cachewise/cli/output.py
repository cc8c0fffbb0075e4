"""What every command prints with: JSON, rich renderables, errors and warnings on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from advisor.errors import CachewiseError
from cachewise.cli.phrases import word


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


def show(renderable: Any) -> None:
    Console().print(renderable)
