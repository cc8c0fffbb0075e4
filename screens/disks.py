"""The Disks screen: every block device grouped by disk, with a detail pane for the selection."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static
from textual.worker import Worker

from advisor.disks.devices import Device, Inventory
from advisor.disks.eligibility import probe_key
from advisor.disks.hotplug import HotplugWatcher
from advisor.disks.probe import ProbeResult
from advisor.disks.scheduler import Pass, ScanScheduler
from advisor.errors import CachewiseError, next_step, shown
from advisor.units import human_size
from advisor.workload.analysis import Analysis
from cachewise.core import discover, plans, workload
from cachewise.core.advise import AdviceRequest, prepare
from recipes.removal import RemoveOptions
from screens.base import CoreScreen
from screens.phrases import TUI, word
from screens.probing import ProbeFinished, ProbePanel, ProbeUpdate, measured_text, probe_each

STATE_STYLE = {"free": "green", "has-data": "yellow", "in-use": "red"}


def device_details(dev: Device, probe: ProbeResult | None = None) -> Table:
    """The facts of one device as a two-column grid."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()

    def row(label: str, value: object) -> None:
        if value not in (None, "", (), False):
            grid.add_row(label, value if isinstance(value, Text) else str(value))

    row("Device", f"{dev.name} ({dev.kind})")
    row("Path", shown(dev.stable_path) if dev.stable_path else f"{dev.devnode} (no stable path)")
    row("Identity", dev.identity or "none: no serial, WWN or UUID")
    row("Model", " ".join(x for x in (dev.vendor, dev.model) if x))
    row("Serial", dev.serial)
    row("WWN", dev.wwn)
    row("Transport", dev.transport)
    row("Size", f"{human_size(dev.size_bytes)} ({dev.size_bytes:,} bytes)")
    if dev.logical_sector_size:
        row("Sectors", f"{dev.logical_sector_size} B logical, {dev.physical_sector_size} B physical")
    row("Rotational", {True: "yes (kernel flag)", False: "no (kernel flag)", None: "unknown"}[dev.rotational])
    if probe is not None:
        c = probe.classification
        row("Measured", Text.assemble(measured_text(probe), f" ({c.confidence}): {c.reason}"))
        for line in (*c.disagreements, *probe.notes):
            row("", Text(line, style="yellow"))
    row("Discard", {True: "supported", False: "not supported", None: ""}[dev.discard])
    row(
        "Signature",
        " ".join(x for x in (dev.fs_type, dev.fs_uuid) if x)
        or (f"{dev.partition_table} partition table" if dev.partition_table else ""),
    )
    row("Label", dev.fs_label)
    row("Mounted at", ", ".join(map(shown, dev.mountpoints)))
    if dev.lvm is not None:
        row(
            "LVM",
            f"PV of VG {dev.lvm.vg}"
            if dev.lvm.role == "pv"
            else f"LV {dev.lvm.vg}/{dev.lvm.lv} {dev.lvm.segtype or ''}".strip(),
        )
    if dev.bcache is not None:
        b = dev.bcache
        parts: list[str] = [b.role]
        if b.cache_set_uuid:
            parts.append(f"set {b.cache_set_uuid}")
        if b.cache_mode:
            parts.append(b.cache_mode)
        if b.state:
            parts.append(f"state {b.state}")
        if b.dirty_data:  # the kernel's '0.0k' is said as none, any other amount in bytes as everywhere else
            dirty = b.dirty_bytes
            parts.append(f"dirty {b.dirty_data if dirty is None else human_size(dirty) if dirty else 'none'}")
        row("bcache", ", ".join(parts))
    if dev.md is not None:
        row("RAID", f"{dev.md.role} {dev.md.array or ''} {dev.md.level or ''}".strip())
    row("Loop file", dev.loop_file)
    row("Partitions", ", ".join(dev.partitions))
    row("Holders", ", ".join(dev.holders))
    row("Built on", ", ".join(dev.slaves))
    row("State", Text(dev.in_use_reason, style=STATE_STYLE[dev.state]))
    if dev.caching is not None:
        part = dev.caching
        row("Cache", Text(f"{part.kind}: {part.part}; {part.state}", style="bold red" if part.degraded else ""))
        can = TUI.what_can_be_done(part.can, part.next)
        if can:
            row("", Text(can, style="dim" if part.remove else "yellow"))
    for item in dev.unreadable:
        row("Not read", f"{item.fact}: {item.reason}")
    return grid


class DevicesChanged(Message):
    """Block devices appeared or disappeared (from the hot-plug watcher's thread)."""

    def __init__(self, changes: list[tuple[str, str]]) -> None:
        super().__init__()
        self.changes = changes

    @property
    def reason(self) -> str:
        return ", ".join(f"{action} {name}" for action, name in self.changes)


class DisksScreen(CoreScreen):
    BINDINGS = [
        # Rescan (hot-plug rescans by itself) and Hidden stay out of the footer, so the rest fits
        # 80 columns; ? and the palette (Ctrl+P) list them.
        Binding("r", "rescan", "Rescan", show=False),
        Binding("h", "toggle_all", "Hidden", show=False),
        Binding("space", "toggle_mark", "Mark"),
        Binding("p", "probe", "Probe"),
        Binding("t", "analyze_trace", "Trace"),
        Binding("c", "recommend", "Cache"),  # recommend a cache for the highlighted device
        Binding("q", "app.quit", "Quit"),
        Binding("w", "warmup", "Warm-up"),
        Binding("u", "uncache", "Uncache", show=False),  # after Quit: at 80 columns the footer has no room left
        Binding("g", "guide", "Guided flows", show=False),
        Binding("d", "doctor", "Doctor", show=False),
    ]

    HELP = (
        "Every disk, partition, LV, md and bcache device on this machine, with its role and state; "
        "the panel on the right shows the highlighted one. To add a cache: mark the SSD(s) with Space, "
        "highlight the slow disk or LV, and press c. p measures the marked disks with a short read-only "
        "fio probe; t opens a trace of the workload; w follows a cache that exists; h shows loop, zram and "
        "empty devices too; u removes the highlighted cache (flushing it first, after a preview you confirm). "
        "g opens the start screen with the guided flows (add a cache, remove one, plan only); d the Doctor, "
        "which says what is wrong with the caches and what fixes it. "
        "Nothing on this screen changes a disk without that confirmation."
    )

    def __init__(self, watch_hotplug: bool = True) -> None:
        super().__init__()
        self.inventory: Inventory | None = None
        self._scan_seconds = 0.0
        self.show_all = False
        self.watch_hotplug = watch_hotplug
        self._recorded = False
        self._watcher: HotplugWatcher | None = None
        self.scheduler = ScanScheduler(self._scan, self._scanned)
        self.marked: set[str] = set()
        self.probing: set[str] = set()
        self.analysis: Analysis | None = None  # the latest trace analysed here, for Recommend

    @property
    def scanning(self) -> bool:
        """Discovery is running (or about to)."""
        return self.scheduler.running

    @property
    def probes(self) -> dict[str, ProbeResult]:
        """This session's probe results, shared with the guided flows."""
        return self.services.probes

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="disks-main"):
            yield DataTable(id="devices", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="detail-pane"):
                yield Static("Scanning block devices…", id="detail")
        yield ProbePanel(fade_after=self.PROBE_RESULTS_SECONDS, id="probes")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#devices", DataTable)
        table.add_columns("Device", "Size", "Bus", "Rot", "Measured", "Role", "State")
        self.query_one(ProbePanel).display = False
        table.focus()
        self.scan()
        if self.watch_hotplug:
            self.watch_devices()

    PROBE_RESULTS_SECONDS = 30.0  # the probe panel closes itself this long after the last probe; the
    # Measured column and the detail pane keep the results
    NARROW = 130  # columns below which the detail pane goes under the table, so no column is cut

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < self.NARROW, "narrow")

    def on_unmount(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()

    def action_guide(self) -> None:
        self.nav.start()

    def action_doctor(self) -> None:
        self.nav.doctor()

    def action_rescan(self) -> None:
        self.scan()

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all
        self.notify("Showing loop, zram and empty devices" if self.show_all else "Hiding loop, zram and empty devices")
        self._fill()
        self._status_line()

    def scan(self, quick_first: bool = False, changed: set[str] | None = None) -> None:
        """Ask for a rescan (advisor.disks.scheduler): ``quick_first`` (a hot-plug event) shows
        the change at once, the full pass following once the events settle."""
        if self.scheduler.request(quick_first, changed):
            self._scan_loop()

    def _scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        return discover.scan(self.core, quick, should_stop, changed)

    @work(thread=True, group="scan", description="Discovery", exit_on_error=False)
    def _scan_loop(self) -> None:
        self.scheduler.run()

    def _scanned(self, inv: Inventory, seconds: float, done: Pass) -> None:
        """A scan to show (from the scan thread); the first full one is recorded, and earlier
        probe results of these devices are shown."""
        self.app.call_from_thread(self._show, inv, seconds)
        if done == "full":
            self._record(inv)

    def _record(self, inv: Inventory) -> None:
        if not self._recorded:
            self._recorded = True
            self.services.warn_from_thread(discover.record_inventory(self.core, inv))
        earlier, warning = discover.earlier_probes(self.core, inv)
        self.services.warn_from_thread(warning)
        if earlier:
            self.app.call_from_thread(self._add_probes, earlier)

    def _add_probes(self, found: dict[str, ProbeResult]) -> None:
        for name, result in found.items():
            self.probes.setdefault(name, result)
        self._fill()

    def action_toggle_mark(self) -> None:
        name = self.selected_name
        if name is None:
            return
        self.marked ^= {name}
        self._fill()

    def action_probe(self) -> None:
        if self.inventory is None:
            return
        if self.core.replay or self.core.prober is None:
            # The snapshot's devices belong to the machine it was saved on, not to this one.
            self.refuse(CachewiseError("snapshot-only", next=[next_step("run-on-machine")]))
            return
        names = sorted(self.marked) or ([self.selected_name] if self.selected_name else [])
        devices = [d for d in (self.inventory.by_name(n) for n in names) if d is not None]
        devices = [d for d in devices if d.name not in self.probing]
        if devices:
            self.run_probes(devices)

    @work(group="probe-confirm", description="confirm probing busy disks", exit_on_error=False)
    async def run_probes(self, devices: list[Device]) -> None:
        busy = [d for d in devices if d.state == "in-use"]
        if busy:
            question = "\n".join(f"{d.name} is {d.in_use_reason}." for d in busy)
            question += (
                f"\n\nThe probe only reads, but it adds about {self.services.probe_seconds:g} s of read load. "
                "Probe anyway?"
            )
            if not await self.nav.ask_probe_busy(question):
                return
        self.marked.clear()
        self.probing |= {d.name for d in devices}
        self._fill()
        self._probe_devices(devices)

    @work(thread=True, group="probe", description="probe disks with fio", exit_on_error=False)
    def _probe_devices(self, devices: list[Device]) -> None:
        probe_each(self, devices)

    @on(ProbeUpdate)
    def _probe_update(self, message: ProbeUpdate) -> None:
        self.query_one(ProbePanel).progress(message.progress)

    @on(ProbeFinished)
    def _probe_finished(self, message: ProbeFinished) -> None:
        self.probing.discard(message.device)
        if message.result is not None:
            self.probes[message.result.identity or message.device] = message.result
        self.query_one(ProbePanel).finished(message.device, message.result, message.error)
        self._fill()

    @work(group="analyze", description="open and analyse a trace", exit_on_error=False)
    async def action_analyze_trace(self) -> None:
        path = await self.nav.ask_trace()
        if path is None:
            return
        self.notify(f"Analysing {path}…")
        try:
            analysis = await asyncio.to_thread(self._analyze, path)
        except CachewiseError as exc:
            self.refuse(exc, "error")
            return
        self.analysis = analysis
        self.nav.analysis(analysis)

    def _analyze(self, path: Path) -> Analysis:
        """Analyse in a thread; a long trace's progress shows on the status line meanwhile."""
        shown: list[bool] = []

        def progress(what: str, share: float) -> None:
            self.app.call_from_thread(self._analysis_status, f"Analysing {path}: {what}, {share:.0%}")
            shown[:] = [True]

        try:
            analysis, meta = workload.analyze(self.core, path, progress)
        finally:
            if shown:
                self.app.call_from_thread(self._status_line)
        self.services.warn_from_thread(workload.record_analysis(self.core, analysis, path, meta))
        return analysis

    @work(group="recommend", description="gather the facts for a recommendation", exit_on_error=False)
    async def action_recommend(self) -> None:
        """Recommend a cache for the highlighted device (the slow one) with the marked SSDs."""
        inv, slow_name = self.inventory, self.selected_name
        fast_names = sorted(self.marked - {slow_name}) if slow_name else []
        if inv is None or slow_name is None or not fast_names:
            self.notify(
                "Mark the SSD(s) with space, then highlight the slow disk or LV and press c.", severity="warning"
            )
            return
        request = AdviceRequest(
            slow_name, tuple(fast_names), analysis=self.analysis, known_probes=self.probes, inventory=inv
        )
        try:
            prepared = await asyncio.to_thread(prepare, self.core, request)
        except CachewiseError as exc:
            self.refuse(exc, "error")
            return
        for warning in prepared.warnings:
            self.notify(word(warning), severity="warning")
        self.nav.recommend(prepared.inputs, inv)

    @work(group="warmup", exclusive=True, description="find the cache to watch", exit_on_error=False)
    async def action_warmup(self) -> None:
        """Watch the highlighted cache warm up: a cached LV, a bcacheN or its backing device."""
        name = self.selected_name
        dev = self.inventory.by_name(name) if self.inventory and name else None
        if dev is None:
            return
        lvm = dev.lvm
        await self.nav.warmup(f"{lvm.vg}/{lvm.lv}" if lvm is not None and lvm.lv else dev.devnode)

    def action_uncache(self) -> None:
        """Remove the highlighted cache: the plan (flush first, then detach) is previewed and runs
        once its device's name is typed, with the flush counting down in its log."""
        name = self.selected_name
        inv = self.inventory
        dev = inv.by_name(name) if inv and name else None
        if inv is None or dev is None:
            return
        try:
            plan = plans.make(self.core, inv, "remove", RemoveOptions(device=dev.devnode))
        except CachewiseError as exc:
            self.refuse(exc)
            return
        self.nav.apply(plan)

    @work(thread=True, group="hotplug", description="watch for disks being added or removed", exit_on_error=False)
    def watch_devices(self) -> None:
        def changed(changes: list[tuple[str, str]]) -> None:
            self.post_message(DevicesChanged(changes))

        watcher = HotplugWatcher(changed)
        self._watcher = watcher
        watcher.run()

    @on(DevicesChanged)
    def _devices_changed(self, message: DevicesChanged) -> None:
        removed = {name for action, name in message.changes if action == "remove"}
        if removed and self.inventory is not None:
            # A removal needs no scan to be shown: drop the device and what sits on it now.
            self.inventory = self.inventory.without(removed)
            self._fill()
        self.query_one("#status", Static).update(f"Change seen: {message.reason}; rescanning…")
        self.scan(quick_first=True, changed={name for _action, name in message.changes})

    def worker_failed(self, worker: Worker[object], error: BaseException) -> None:
        if worker.group != "scan":
            super().worker_failed(worker, error)
            return
        why = error.what if isinstance(error, CachewiseError) else error
        self.query_one("#detail", Static).update(
            Text(f"Discovery failed: {why}. Nothing was changed; press r to try again.", style="red")
        )

    def _show(self, inv: Inventory, seconds: float) -> None:
        self.inventory = inv
        self._scan_seconds = seconds
        self._fill()
        self._status_line()

    def _analysis_status(self, line: str) -> None:
        self.query_one("#status", Static).update(line)

    def _status_line(self) -> None:
        inv = self.inventory
        if inv is None:
            return
        hidden = len(inv.devices) - len(inv.visible(False))
        shown = len(inv.visible(self.show_all))
        if not hidden:
            extra = ""
        elif self.show_all:
            extra = f", {hidden} of them loop, zram or empty (h: hide them)"
        else:
            extra = f"; {hidden} hidden (h: show them)"
        notes = "  ".join(inv.notes)
        self.query_one("#status", Static).update(
            f"{shown} device{'s' if shown != 1 else ''}{extra}; scanned in {self._scan_seconds:.1f} s. "
            f"g: guided flows, ?: help. {notes}"
        )

    def _fill(self) -> None:
        if self.inventory is None:
            return
        table = self.query_one("#devices", DataTable)
        selected = self.selected_name
        with self.app.batch_update():
            table.clear()
            for depth, dev in self.inventory.tree(self.show_all):
                name = ("  " * depth) + ("└ " if depth else "") + dev.name
                mark = "● " if dev.name in self.marked else ""
                table.add_row(
                    mark + name,
                    human_size(dev.size_bytes),
                    dev.transport or "",
                    {True: "yes", False: "no", None: "?"}[dev.rotational],
                    Text("probing…", style="cyan")
                    if dev.name in self.probing
                    else measured_text(self.probes.get(probe_key(dev))),
                    dev.role,
                    Text(dev.state, style=STATE_STYLE[dev.state]),
                    key=dev.name,
                )
            if selected is not None and selected in table.rows:
                table.move_cursor(row=table.get_row_index(selected))
        self._update_detail()

    @property
    def selected_name(self) -> str | None:
        table = self.query_one("#devices", DataTable)
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except Exception:  # noqa: BLE001 - an empty or refilled table has no cursor row
            return None
        return str(key.value) if key.value is not None else None

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._update_detail()

    def _update_detail(self) -> None:
        detail = self.query_one("#detail", Static)
        name = self.selected_name
        dev = self.inventory.by_name(name) if self.inventory and name else None
        if dev is None:
            detail.update("No block devices found." if self.inventory else "Scanning block devices…")
        else:
            detail.update(device_details(dev, self.probes.get(probe_key(dev))))
