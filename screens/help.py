"""`?` or F1 on any screen: what the screen is for and every key it answers to."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from screens.phrases import KEYS


def key_label(key: str) -> str:
    names = {"question_mark": "?", "escape": "Esc", "space": "Space", "enter": "Enter", "f1": "F1", "f2": "F2"}
    return names.get(key, key)


@dataclass(frozen=True)
class KeyAction:
    """One of cachewise's actions on a screen: its keys, its word, what it does."""

    keys: str  # "? or F1"
    title: str  # the binding's word ("Probe")
    about: str  # what it does, from the phrasebook (screens.phrases.KEYS)
    action: str
    node: DOMNode
    enabled: bool


def screen_actions(screen: Screen[object]) -> list[KeyAction]:
    """Every action of cachewise the screen answers to now (the screen's and the app's), once
    each, with all its keys. Textual's own (copy, focus, its Ctrl+Q) and a focused widget's (a
    table's arrows) are not cachewise's and go without saying: an action is cachewise's when the
    phrasebook describes it, and tests/tui/test_palette.py holds every binding of every screen
    to having a description there."""
    found: dict[str, KeyAction] = {}
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if active.node not in (screen, screen.app) or binding.action not in KEYS:
            continue
        seen = found.get(binding.action)
        if seen is not None:
            found[binding.action] = replace(seen, keys=f"{seen.keys} or {key_label(key)}")
            continue
        about = KEYS[binding.action]
        found[binding.action] = KeyAction(
            key_label(key), binding.description or about, about, binding.action, active.node, active.enabled
        )
    return list(found.values())


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
        for a in screen_actions(self.about):
            keys.add_row(Text(a.keys, style="bold"), Text.assemble((a.title, "bold"), f": {a.about}"))
        keys.add_row(
            Text("Ctrl+P", style="bold"),
            Text.assemble(("Palette", "bold"), ": every action of this screen and the guided flows, searchable"),
        )
        with VerticalScroll(id="help"):
            yield Static(Text(text), id="help-text")
            yield Static(keys, id="help-keys")
            yield Static(Text("Esc closes this help.", style="dim"))

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
