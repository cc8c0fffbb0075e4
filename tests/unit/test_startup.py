"""What a command loads before it starts working. Every `cachewise` command pays its imports
again, 15-20 times over under the lab's emulated CPU (docs/lab.md) and on small ARM boards, so
the heavy libraries load only with the commands that use them: numpy with the workload's
analyses, Textual with the TUI, prometheus_client only when metrics are written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cachewise.cli import COMMANDS

HEAVY = ("numpy", "numba", "textual", "prometheus_client")
# The libraries a command's module may load when it is imported (the analyses need numpy).
ALLOWED = {
    "workload": {"numpy"},
    "advice": {"numpy"},
    "recheck": {"numpy"},
    "capture": {"numpy"},
    "tui": {"textual", "numpy"},
}


def loaded_by(module: str) -> set[str]:
    code = (
        "import json, sys, importlib; import cachewise.cli; "
        f"importlib.import_module('cachewise.cli.{module}'); "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_the_command_line_itself_loads_none_of_them() -> None:
    code = f"import json, sys; import cachewise.cli; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


@pytest.mark.parametrize("module", sorted({target.partition(":")[0] for target in COMMANDS.values()}))
def test_each_command_loads_only_the_libraries_it_uses(module: str) -> None:
    assert loaded_by(module) <= ALLOWED.get(module, set())


def test_the_textfile_still_loads_prometheus_client_when_metrics_are_made() -> None:
    code = (
        "import sys; from advisor.watch.export import prometheus_text; "
        "text = prometheus_text([]); assert 'prometheus_client' in sys.modules; print(text)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "cachewise_caches 0.0" in out
