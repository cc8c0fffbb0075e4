"""The Doctor screen: what is wrong with the caches (cachewise.core.doctor), one finding a row
with its severity, and the highlighted one's cause and fix beside it. Enter (or f) on a finding
whose fix is a plan previews that plan, as the Disks screen's u does; a fix that is a command is
shown to run in a shell."""

from __future__ import annotations

import asyncio
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static
from textual.worker import Worker

from advisor.disks.eligibility import fast_choices
from advisor.errors import CachewiseError
from advisor.health.findings import Finding
from cachewise.core.doctor import Checkup, DoctorRequest, doctor, fix_plan
from screens.base import CoreScreen
from screens.names import device_label
from screens.phrases import TUI

STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


def label(f: Finding) -> str:
    """A finding in two or three words for the list ("cache degraded", "ssd worn"); the panel says it whole."""
    return f.code.replace("-", " ")


def finding_details(f: Finding) -> Table:
    """One finding: what was found, why, and what fixes it."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row(Text(f.severity.upper(), style=STYLE[f.severity]), Text(f.subject, style="bold"))
    grid.add_row("Found", f"{f.what}.")
    if f.cause:
        grid.add_row("Cause", f"{f.cause}.")
    fix = f.fix
    if fix is not None:
        grid.add_row("Fix", f"{fix.how}.")
        if fix.plan and fix.needs:
            grid.add_row(
                "",
                Text(
                    f"Enter or f: choose the new {' and '.join(n.upper() for n in fix.needs)}, then preview the plan "
                    f"({fix.plan}); nothing runs before you confirm.",
                    style="cyan",
                ),
            )
        elif fix.plan:
            grid.add_row(
                "", Text(f"Enter or f: preview the plan ({fix.plan}); nothing runs before you confirm.", style="cyan")
            )
        elif fix.command:
            grid.add_row("Command", Text(" ".join(fix.command), style="cyan"))
            grid.add_row("", Text("Run it in a shell as root; cachewise does not run it from here.", style="dim"))
    return grid


class DoctorScreen(CoreScreen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("f", "fix", "Fix"),
        Binding("r", "look_again", "Rescan"),
    ]
    HELP = (
        "What is wrong with the caches on this machine and the SSDs under them, the worst first: a failed cache, "
        "metadata read-only or needing a check, a mirror missing an SSD, I/O errors, dirty data that has stayed "
        "high without going down, a dm-writecache taking too much memory, an SSD wearing out. The panel shows "
        "the highlighted finding's cause and its fix. Enter or f on a finding whose fix is a plan previews that "
        "plan (you confirm before anything runs); a fix that is a command is shown to run in a shell. r looks "
        "again. Without root, or on a saved snapshot, the list says what could not be read."
    )
    NARROW = 130  # columns below which the panel goes under the list

    def __init__(self) -> None:
        super().__init__()
        self.checkup: Checkup | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="doctor-main"):
            yield DataTable(id="findings", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="finding-pane"):
                yield Static("Looking at the caches…", id="finding")
        yield Static("", id="doctor-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#findings", DataTable).add_columns("Severity", "Subject", "Finding")
        self.query_one("#findings", DataTable).focus()
        self.look()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < self.NARROW, "narrow")

    def action_look_again(self) -> None:
        self.query_one("#doctor-status", Static).update("Looking again…")
        self.look()

    @work(thread=True, exclusive=True, group="doctor", description="look at the caches", exit_on_error=False)
    def look(self) -> None:
        checkup = doctor(self.core, DoctorRequest())
        for warning in checkup.warnings:
            self.services.warn_from_thread(warning)
        self.app.call_from_thread(self._show, checkup)

    def _show(self, checkup: Checkup) -> None:
        self.checkup = checkup
        report = checkup.report
        table = self.query_one("#findings", DataTable)
        with self.app.batch_update():
            table.clear()
            for i, f in enumerate(report.findings):
                table.add_row(Text(f.severity.upper(), style=STYLE[f.severity]), f.subject, label(f), key=str(i))
        caches = f"{len(report.caches)} cache{'s' if len(report.caches) != 1 else ''}"
        ssds = f"{len(report.ssds)} SSD{'s' if len(report.ssds) != 1 else ''}"
        counts = ", ".join(
            f"{n} {s}" for s in ("critical", "warning", "info") if (n := sum(f.severity == s for f in report.findings))
        )
        where = "" if report.live else " (a saved snapshot: what discovery saw)"
        self.query_one("#doctor-status", Static).update(
            f"{counts or 'Nothing wrong'}: {caches} and {ssds} looked at{where}. r: look again, ?: help."
        )
        self._update_detail()

    @property
    def selected(self) -> Finding | None:
        if self.checkup is None or not self.checkup.report.findings:
            return None
        row = self.query_one("#findings", DataTable).cursor_row
        findings = self.checkup.report.findings
        return findings[row] if 0 <= row < len(findings) else None

    @on(DataTable.RowHighlighted)
    def _highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._update_detail()

    @on(DataTable.RowSelected)
    def _selected(self, _event: DataTable.RowSelected) -> None:
        self.action_fix()

    def _update_detail(self) -> None:
        pane = self.query_one("#finding", Static)
        f = self.selected
        if f is not None:
            pane.update(finding_details(f))
        elif self.checkup is not None:
            pane.update(Text("Nothing wrong with the caches or their SSDs.", style="green"))

    def action_fix(self) -> None:
        f, checkup = self.selected, self.checkup
        if f is None or checkup is None or f.fix is None:
            return
        if f.fix.plan and f.fix.needs == ("ssd",) and checkup.inventory is not None:
            self.choose_ssd(f)
        elif f.fix.plan and checkup.inventory is not None:
            self.preview(f)
        elif f.fix.command:
            self.notify(f"Run in a shell as root: {' '.join(f.fix.command)}", timeout=20)
        else:
            self.notify(f"{f.fix.how}.", timeout=15)

    @work(group="doctor-fix", exclusive=True, description="ask which new SSD", exit_on_error=False)
    async def choose_ssd(self, f: Finding) -> None:
        """Which new SSD the fix's plan takes (the free ones first, the others with why not), then
        its preview."""
        assert self.checkup is not None and self.checkup.inventory is not None
        inv = self.checkup.inventory
        choices = [
            (d.display_path, device_label(d, inv), None if why is None else TUI.sentence(why))
            for d, why in fast_choices(inv, None)
        ]
        choices.sort(key=lambda c: c[2] is not None)
        question = (
            f"Which new SSD takes the cache of {f.facts['caches'][0]}? The plan is previewed first."
            if f.fix is not None and f.fix.plan == "lvmcache-move" and f.facts.get("caches")
            else f"Which new SSD takes the lost leg of {f.subject}'s mirror? The plan is previewed first."
        )
        path = await self.nav.ask_device(question, choices)
        if path:
            self.preview(f, {"ssd": path})

    @work(group="doctor-fix", exclusive=True, description="make the fix's plan", exit_on_error=False)
    async def preview(self, f: Finding, chosen: dict[str, Any] | None = None) -> None:
        assert self.checkup is not None and self.checkup.inventory is not None and f.fix is not None
        chosen = dict(chosen or {})
        while True:
            try:
                plan = await asyncio.to_thread(fix_plan, self.core, self.checkup.inventory, f.fix, chosen)
            except CachewiseError as exc:
                if exc.code != "rescue-loses-data" or chosen.get("accept_data_loss"):
                    self.refuse(exc)
                    return
                # a dead SSD held writes: asked as the Remove flow asks, then planned with the loss named
                question = (
                    f"{f.subject}: {TUI.sentence(exc)}\n\nTake the cache off anyway? The origin then runs on its "
                    "own without those blocks; a backup restores them. The preview that follows says it again."
                )
                if not await self.nav.ask_accept_loss(question):
                    return
                chosen["accept_data_loss"] = True
                continue
            self.nav.apply(plan)
            return

    def worker_failed(self, worker: Worker[object], error: BaseException) -> None:
        if worker.group != "doctor":
            super().worker_failed(worker, error)
            return
        why = error.what if isinstance(error, CachewiseError) else error
        self.query_one("#finding", Static).update(
            Text(f"Doctor could not look: {why}. Nothing was changed; press r to try again.", style="red")
        )
