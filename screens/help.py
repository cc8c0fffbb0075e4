"""`?` or F1 on any screen: what the screen is for and every key it answers to."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


def key_label(key: str) -> str:
    return {"question_mark": "?", "escape": "Esc", "space": "Space", "enter": "Enter", "f1": "F1"}.get(key, key)


def screen_keys(screen: Screen[object]) -> list[tuple[str, str]]:
    """(key, what it does) for every binding the screen answers to now, the app's included."""
    seen: dict[str, str] = {}
    for key, active in screen.active_bindings.items():
        # The screen's and the app's keys; a focused widget's own (a table's arrows) go without saying.
        if active.binding.description and key not in seen and active.node in (screen, screen.app):
            seen[key] = active.binding.description
    return [(key_label(k), d) for k, d in seen.items()]


class HelpScreen(ModalScreen[None]):
    """This help: what the screen under it is for, and its keys."""

    BINDINGS = [Binding("escape", "dismiss", "Back")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen #help { width: 90%; max-width: 100; height: auto; max-height: 90%; border: thick $primary;
                       background: $surface; padding: 1 2; }
    HelpScreen #help-keys { margin-top: 1; }
    """

    def __init__(self, about: Screen[object]) -> None:
        super().__init__()
        self.about = about

    def compose(self) -> ComposeResult:
        text = getattr(self.about, "HELP", None) or (type(self.about).__doc__ or "").strip()
        keys = Table.grid(padding=(0, 2))
        for key, what in screen_keys(self.about):
            keys.add_row(Text(key, style="bold"), what)
        keys.add_row(Text("Ctrl+P", style="bold"), "every action of this screen, searchable")
        with VerticalScroll(id="help"):
            yield Static(Text(text), id="help-text")
            yield Static(keys, id="help-keys")
            yield Static(Text("Esc closes this help.", style="dim"))

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
