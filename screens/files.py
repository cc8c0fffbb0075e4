"""Asking for a file: a path box that completes what is on disk as it is typed (→ or Tab takes the
completion) and a picker (Ctrl+O or the Browse button) that walks the folders showing only the
files that fit; and the box that saves a plan, which every plan preview shows. Opening a trace
and saving a plan use the same widget."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Button, DirectoryTree, Input, Select, Static, Tree

from advisor.errors import CachewiseError
from advisor.plan.model import Plan
from cachewise.core import plans
from screens.phrases import word


@dataclass(frozen=True)
class Wanted:
    """The files a path box asks for: what they are, and the name endings that show in the picker
    and in the completion (a file of another name can still be typed whole)."""

    what: str
    endings: tuple[str, ...]

    def fits(self, name: str) -> bool:
        return name.lower().endswith(self.endings)


TRACES = Wanted(
    "a trace (cachewise trace, fio iolog, blkparse text or CSV)", (".trace", ".iolog", ".log", ".txt", ".csv")
)
PLANS = Wanted("a plan (JSON, or an Ansible playbook)", (".json", ".yml", ".yaml"))

SCAN_LIMIT = 5000  # entries read from one folder for a completion: a huge folder is not read whole per key


def user_path(text: str) -> Path:
    """A path as a person types it: spaces around it dropped, ~ and ~user expanded (left as they
    are when there is no such user, never an error)."""
    return Path(os.path.expanduser(text.strip()))


def _is_dir(entry: os.DirEntry[str] | Path) -> bool:
    """Whether it is a folder (through a link too); False when it cannot be told (no permission)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def names_in(folder: Path, prefix: str, wanted: Wanted, folders_only: bool = False) -> list[str]:
    """The entries of ``folder`` that start with ``prefix`` and fit: folders (with a trailing /)
    and the wanted files, sorted; hidden ones only when the prefix asks for them. An unreadable
    folder has none."""
    found: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n >= SCAN_LIMIT:
                    break
                name = entry.name
                if not name.startswith(prefix) or (name.startswith(".") and not prefix.startswith(".")):
                    continue
                if _is_dir(entry):
                    found.append(name + "/")
                elif not folders_only and wanted.fits(name):
                    found.append(name)
    except OSError:
        return []
    return sorted(found)


def complete(value: str, wanted: Wanted, folders_only: bool = False) -> str | None:
    """The completion of a path being typed: the longest part every match shares, or the first
    match when they share no more than what is typed; None when nothing fits. The value keeps its
    own spelling (~, a relative path), only its end is completed."""
    if not value:
        return None
    if value == "~":
        return "~/"
    cut = value.rfind("/") + 1
    head, prefix = value[:cut], value[cut:]
    folder = Path(os.path.expanduser(head)) if head else Path(".")
    matches = names_in(folder, prefix, wanted, folders_only)
    if not matches:
        return None
    common = os.path.commonprefix(matches)
    pick = common if len(common) > len(prefix) else matches[0]
    return None if pick == prefix else head + pick


class PathSuggester(Suggester):
    """Completes a path from the file system as it is typed: folders, and the wanted files."""

    def __init__(self, wanted: Wanted, folders_only: bool = False) -> None:
        super().__init__(use_cache=False, case_sensitive=True)  # the folders change under it
        self.wanted = wanted
        self.folders_only = folders_only

    async def get_suggestion(self, value: str) -> str | None:
        return await asyncio.to_thread(complete, value, self.wanted, self.folders_only)


class PickerTree(DirectoryTree):
    """The folders, and in them only the wanted files (none when a folder is asked for)."""

    def __init__(self, path: Path, wanted: Wanted, folders_only: bool, id: str | None = None) -> None:
        super().__init__(path, id=id)
        self.wanted = wanted
        self.folders_only = folders_only

    def filter_paths(self, paths: Iterable[Path]) -> Iterator[Path]:
        for path in paths:
            if path.name.startswith("."):
                continue
            if _is_dir(path) or (not self.folders_only and self.wanted.fits(path.name)):
                yield path


def start_folder(value: str) -> Path:
    """Where the picker opens: the folder the box names, or the one its file is in, else here."""
    typed = user_path(value) if value.strip() else Path.cwd()
    for folder in (typed, typed.parent):
        if _is_dir(folder):
            return folder.resolve()
    return Path.cwd()


class FilePicker(ModalScreen[Path | None]):
    """Choose a file (or, to save into, a folder) in the folders: only what fits is listed."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("backspace", "up", "Up a folder"),
        Binding("ctrl+s", "choose", "Choose this folder"),
    ]
    DEFAULT_CSS = """
    FilePicker { align: center middle; }
    FilePicker #file-picker {
        width: 90%; max-width: 110; height: 90%; max-height: 40;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    FilePicker #picker-tree { height: 1fr; }
    FilePicker #picker-current { height: auto; max-height: 3; }
    FilePicker #picker-buttons { height: auto; }
    FilePicker #picker-buttons Button { margin-right: 1; }
    """

    def __init__(self, start: Path, wanted: Wanted, folders_only: bool = False) -> None:
        super().__init__()
        self.start = start
        self.wanted = wanted
        self.folders_only = folders_only

    HELP = (
        "Choose a file, or the folder to save in: ↑↓ move, Enter opens a folder (or chooses a file), Ctrl+S "
        "chooses the highlighted folder to save in, Backspace goes up a folder, Esc cancels. Only the files that "
        "fit are listed; another can be typed whole in the box."
    )

    def heading(self) -> str:
        if self.folders_only:
            return (
                "Choose the folder to save in: ↑↓ move, Enter opens a folder, Ctrl+S (or Choose) takes the "
                "highlighted one, Backspace goes up, Esc cancels."
            )
        return (
            f"Choose {self.wanted.what}: ↑↓ move, Enter opens a folder or chooses a file, Backspace goes up, "
            f"Esc cancels. Listed: files ending in {', '.join(self.wanted.endings)}."
        )

    def compose(self) -> ComposeResult:
        with Vertical(id="file-picker"):
            yield Static(Text(self.heading(), style="dim"), id="picker-title")
            yield PickerTree(self.start, self.wanted, self.folders_only, id="picker-tree")
            yield Static("", id="picker-current")
            with Horizontal(id="picker-buttons"):
                yield Button("Choose", id="picker-choose", variant="primary")
                yield Button("Up a folder", id="picker-up")
                yield Button("Cancel", id="picker-cancel")

    def on_mount(self) -> None:
        self.query_one(PickerTree).focus()
        self._show(self.start)

    def _show(self, path: Path) -> None:
        self.query_one("#picker-current", Static).update(Text.assemble(("Highlighted: ", "bold"), str(path)))

    @property
    def highlighted(self) -> Path:
        tree = self.query_one(PickerTree)
        node = tree.cursor_node
        return node.data.path if node is not None and node.data is not None else Path(tree.path)

    @on(Tree.NodeHighlighted, "#picker-tree")
    def _highlighted(self, _event: Tree.NodeHighlighted[object]) -> None:
        self._show(self.highlighted)

    @on(DirectoryTree.FileSelected, "#picker-tree")
    def _file(self, event: DirectoryTree.FileSelected) -> None:
        if not self.folders_only:
            self.dismiss(event.path)

    def action_choose(self) -> None:
        """The highlighted file (a folder opens), or, to save into, the highlighted folder."""
        path = self.highlighted
        if self.folders_only:
            self.dismiss(path if _is_dir(path) else path.parent)
        elif _is_dir(path):
            node = self.query_one(PickerTree).cursor_node
            if node is not None:
                node.toggle()
        else:
            self.dismiss(path)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "choose" or self.folders_only

    def action_up(self) -> None:
        tree = self.query_one(PickerTree)
        here = Path(tree.path)
        if here.parent != here:
            tree.path = here.parent
            self._show(here.parent)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#picker-choose")
    def _choose(self) -> None:
        self.action_choose()

    @on(Button.Pressed, "#picker-up")
    def _up(self) -> None:
        self.action_up()

    @on(Button.Pressed, "#picker-cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class PathInput(Input):
    """A box for a path: completes from the file system as it is typed (→ or Tab takes it), and
    Ctrl+O opens the picker, whose choice comes back into the box (a file chosen is submitted)."""

    BINDINGS = [
        Binding("tab", "complete", "Complete the path", show=False),
        Binding("ctrl+o", "browse", "Browse"),
    ]

    def __init__(
        self,
        value: str = "",
        *,
        wanted: Wanted,
        folders_only: bool = False,
        id: str | None = None,
        placeholder: str = "",
    ) -> None:
        super().__init__(value, placeholder, suggester=PathSuggester(wanted, folders_only), id=id)
        self.wanted = wanted
        self.folders_only = folders_only

    def action_complete(self) -> None:
        """Take the completion shown; with none, Tab moves on as everywhere else."""
        if self.cursor_at_end and self._suggestion and self._suggestion != self.value:
            self.value = self._suggestion
            self.cursor_position = len(self.value)
        else:
            self.screen.focus_next()

    def action_browse(self) -> None:
        self.app.push_screen(FilePicker(start_folder(self.value), self.wanted, self.folders_only), self._picked)

    def _picked(self, path: Path | None) -> None:
        if path is None:
            return
        if self.folders_only:  # a folder to save into: the file's name stays
            name = Path(self.value.strip()).name if self.value.strip() else ""
            path = path / name if name else path
        self.value = str(path)
        self.cursor_position = len(self.value)
        self.focus()
        if not self.folders_only:
            self.post_message(Input.Submitted(self, self.value))


class PathField(Horizontal):
    """A path box with its Browse button beside it (the button opens the same picker as Ctrl+O)."""

    DEFAULT_CSS = """
    PathField { height: auto; }
    PathField > PathInput { width: 1fr; }
    PathField > Button { min-width: 14; width: 14; }
    """

    def __init__(
        self, value: str = "", *, wanted: Wanted, folders_only: bool = False, input_id: str, placeholder: str = ""
    ) -> None:
        super().__init__(id=f"{input_id}-field")
        self.box = PathInput(value, wanted=wanted, folders_only=folders_only, id=input_id, placeholder=placeholder)

    def compose(self) -> ComposeResult:
        yield self.box
        yield Button("Browse ^O", id=f"{self.box.id}-browse")

    @on(Button.Pressed)
    def _browse(self, event: Button.Pressed) -> None:
        event.stop()
        self.box.action_browse()


Format = Literal["json", "ansible"]


class SaveBox(Vertical):
    """Save a plan to a new file: JSON (for `cachewise apply`) or an Ansible playbook, the path
    with completion and the picker, and what came of it, kept in view under the preview."""

    DEFAULT_CSS = """
    SaveBox { height: auto; padding: 0 1; border-top: solid $primary; }
    SaveBox > #save-row { height: auto; }
    SaveBox #save-format { width: 34; }
    SaveBox #save-note { width: 1fr; padding: 1 0 0 1; }
    SaveBox #save-status { height: auto; max-height: 4; }
    """

    def __init__(self, plan: Plan, path: Path, note: str = "") -> None:
        super().__init__(id="save-box")
        self.plan = plan
        self.path = path
        self.note = note
        self.saved: Path | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="save-row"):
            yield Select(
                [("JSON, for `cachewise apply`", "json"), ("Ansible playbook", "ansible")],
                value="json",
                allow_blank=False,
                id="save-format",
            )
            yield Static(Text(self.note or "Save the plan as", style="bold"), id="save-note")
        yield PathField(str(self.path), wanted=PLANS, folders_only=True, input_id="save-path")
        yield Static(
            Text("Enter in the file name saves it. Tab completes the path, Ctrl+O browses the folders.", style="dim"),
            id="save-status",
        )

    @property
    def format(self) -> Format:
        return "ansible" if self.query_one("#save-format", Select).value == "ansible" else "json"

    @on(Select.Changed, "#save-format")
    def _format(self, event: Select.Changed) -> None:
        box = self.query_one("#save-path", Input)
        value = box.value.strip()
        if value and not value.endswith("/") and Path(value).name not in ("", ".", ".."):
            box.value = str(Path(value).with_suffix(".yml" if event.value == "ansible" else ".json"))

    @on(Input.Submitted, "#save-path")
    def _save(self, event: Input.Submitted) -> None:
        event.stop()
        status = self.query_one("#save-status", Static)
        if not event.value.strip():
            status.update(Text("Name the file to save the plan in; nothing was saved.", style="red"))
            return
        path = user_path(event.value)
        fmt = self.format
        try:
            plans.save(self.plan, path, fmt)
        except CachewiseError as exc:
            status.update(Text(word(exc), style="red"))
            self.app.notify(word(exc), severity="error", timeout=10)
            return
        self.saved = path
        how = f"ansible-playbook -i HOSTS {path}" if fmt == "ansible" else f"sudo cachewise apply {path}"
        status.update(Text(f"Saved to {path}. Run it with: {how}", style="bold green"))
        self.app.notify(f"Saved to {path}. Run it with: {how}", title="Plan saved", timeout=10)
