"""SVG screenshots of the key screens for the README, written by the tests that drive them
(Textual's own export), so the pictures always show the screens as the code draws them now.
Run `pytest tests/tui` and commit docs/screens/ when a screen changes; test_screenshots.py
fails while a committed picture shows other text than the screen draws."""

from __future__ import annotations

import html
import re
from pathlib import Path

from textual.app import App

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screens"


def svg_text(svg: str) -> list[str]:
    """The visible text of an exported screen, row by row (what a reader sees, not its styling)."""
    rows: dict[str, list[str]] = {}
    for match in re.finditer(r'<text [^>]*?y="([\d.]+)"[^>]*>(.*?)</text>', svg, re.S):
        rows.setdefault(match.group(1), []).append(html.unescape(re.sub(r"<[^>]+>", "", match.group(2))))
    return ["".join(parts).replace("\xa0", " ").rstrip() for _, parts in sorted(rows.items(), key=lambda kv: float(kv[0]))]


def save(app: App[object], name: str) -> Path:
    """Export the current screen as docs/screens/NAME.svg; keep the committed file when only the
    styling's generated names differ, so the tree stays clean."""
    DOCS.mkdir(parents=True, exist_ok=True)
    path = DOCS / f"{name}.svg"
    svg = app.export_screenshot(title=f"cachewise: {name}")
    if not path.exists() or svg_text(path.read_text()) != svg_text(svg):
        path.write_text(svg)
    return path
