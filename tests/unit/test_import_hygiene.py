"""advisor/ (the domain) and recipes/ (plans) must never import the UI.

The same rule is an import-linter contract in pyproject.toml; this test reads the source so
it fails even where import-linter is not installed, and catches imports inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("textual", "screens", "cachewise")


def ui_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            if name.split(".")[0] in FORBIDDEN:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    return found


@pytest.mark.parametrize("package", ["advisor", "recipes"])
def test_domain_never_imports_textual(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no modules found under {package}/"
    offenders = [hit for path in files for hit in ui_imports(path)]
    assert offenders == []


def test_the_check_catches_an_offender(tmp_path: Path) -> None:
    bad = ROOT / "advisor" / "_hygiene_probe_tmp.py"
    bad.write_text("def f():\n    from textual.app import App\n    return App\n")
    try:
        assert ui_imports(bad) == ["advisor/_hygiene_probe_tmp.py:2 imports textual.app"]
    finally:
        bad.unlink()
