"""The guided flows: the start screen and the steps of *Add an SSD cache*, *Remove a cache* and
*Plan only*. Each step is a screen pushed over the last, so Esc is always Back; a step bar on
every step says where the user is. The steps call the application core (cachewise/core.py) as
the rest of the TUI does; the recommendation, the preview and the Warm-up screen are the
shared screens, given the flow so they show its step and go on to the next one."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Footer, Header, Input, OptionList, Select, Static
from textual.widgets.option_list import Option

from advisor.disks.devices import Device, Inventory
from advisor.disks.probe import ProbeResult
from advisor.units import human_size
from cachewise.core import Refused
from screens.base import CoreScreen
from screens.disks import probe_key
from screens.probing import ProbeFinished, ProbePanel, ProbeUpdate, measured_text, probe_each
from screens.widgets import Curve, CurveChart

if TYPE_CHECKING:
    from advisor.plan.model import Plan
    from advisor.workload.analysis import Analysis

FlowKind = Literal["add", "remove", "plan"]

FLOWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "add": (
        "Add an SSD cache",
        ("Slow device", "Fast device", "Measure", "Workload", "Recommendation", "Preview and apply", "Warm-up"),
    ),
    "remove": ("Remove a cache", ("Cached device", "Preview, flush and detach")),
    "plan": ("Plan only", ("Slow device", "Fast device", "Workload", "Recommendation", "Save the plan")),
}

START_CHOICES = (
    (
        "add",
        "Add an SSD cache",
        "Put an SSD in front of a hard disk or an LV: pick the two, measure them and the workload, take the "
        "recommendation (or one of its alternatives), preview the exact commands, type the device's name to apply, "
        "and watch the cache warm up. Needs root.",
    ),
    (
        "remove",
        "Remove a cache",
        "Take an lvmcache, dm-writecache or bcache away again: see the dirty data, flush it with a countdown, detach, "
        "verify, and give the SSD back. Needs root.",
    ),
    (
        "plan",
        "Plan only (no root needed)",
        "The same questions as Add, ending in a plan file (JSON for `cachewise apply`, or an Ansible playbook) and "
        "the command that applies it. Nothing on this machine is changed.",
    ),
    (
        "disks",
        "Browse the disks",
        "Every disk, partition, LV, md and bcache device with its role and state; probe, trace and recommend from "
        "there (Esc on this screen goes there too).",
    ),
)


@dataclass
class Flow:
    """What the user chose so far in one guided flow."""

    kind: FlowKind
    inventory: Inventory
    probes: dict[str, ProbeResult] = field(default_factory=dict)
    slow: Device | None = None
    fast: list[Device] = field(default_factory=list)
    analysis: Analysis | None = None
    workload: str | None = None

    @property
    def title(self) -> str:
        return FLOWS[self.kind][0]

    @property
    def steps(self) -> tuple[str, ...]:
        return FLOWS[self.kind][1]


class StepBar(Static):
    """`Add an SSD cache · step 3 of 7: Measure`, then every step with this one lit, when it fits."""

    DEFAULT_CSS = "StepBar { height: auto; background: $boost; padding: 0 1; }"

    def __init__(self, flow: Flow, step: str) -> None:
        super().__init__("")
        self.flow, self.step = flow, step

    def on_mount(self) -> None:
        self._draw()

    def on_resize(self, _event: events.Resize) -> None:
        self._draw()

    def _draw(self) -> None:
        steps = self.flow.steps
        n = steps.index(self.step) + 1
        head = Text.assemble((self.flow.title, "bold"), f" · step {n} of {len(steps)}: ", (self.step, "bold reverse"))
        chain = Text("  ")
        for i, name in enumerate(steps, 1):
            if i > 1:
                chain.append(" › ", "dim")
            chain.append(f"{i} {name}", "bold reverse" if i == n else ("" if i < n else "dim"))
        width = self.content_size.width or 80
        self.update(head if len(head) + len(chain) > width else head + chain)


class FlowScreen(CoreScreen):
    """One step of a guided flow: the step bar on top; Esc goes back a step."""

    STEP = ""
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, flow: Flow) -> None:
        super().__init__()
        self.flow = flow

    def step_bar(self) -> StepBar:
        return StepBar(self.flow, self.STEP)


class StartScreen(CoreScreen):
    """What cachewise can do, as three guided flows and the Disks screen."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Disks"), Binding("q", "app.quit", "Quit")]
    HELP = (
        "Start here. Add an SSD cache leads from choosing the disks to a warm cache, one step at a time; "
        "Remove a cache flushes and detaches one; Plan only saves a plan without changing anything (no root "
        "needed). Browse the disks (or Esc) shows every device. Every step has Esc for Back and ? for help; "
        "nothing changes a disk before you type its name to confirm."
    )

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="start"):
            yield Static(
                Text.assemble(("What would you like to do?", "bold"), "  (↑↓ to choose, Enter to start, q to quit)"),
                id="start-title",
            )
            yield OptionList(*(Option(label, id=key) for key, label, _ in START_CHOICES), id="start-choices")
            yield Static("", id="start-about")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#start-choices", OptionList).highlighted = 0

    @on(OptionList.OptionHighlighted, "#start-choices")
    def _about(self, event: OptionList.OptionHighlighted) -> None:
        about = next(text for key, _, text in START_CHOICES if key == event.option.id)
        self.query_one("#start-about", Static).update(Text(about))

    @on(OptionList.OptionSelected, "#start-choices")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id == "disks":
            self.app.pop_screen()
        else:
            self.begin(event.option.id)

    @work(group="flow", exclusive=True, description="scan the disks for the flow", exit_on_error=False)
    async def begin(self, kind: FlowKind) -> None:
        """Start a flow on a fresh scan (the disks may have changed since the Disks screen's)."""
        from screens.disks import DisksScreen

        try:
            inv = await asyncio.to_thread(self.core.scan)
        except Exception as exc:  # noqa: BLE001 - shown, nothing changed
            self.notify(f"Discovery failed: {exc}. Nothing was changed; try again.", severity="error")
            return
        known = next((s.probes for s in self.app.screen_stack if isinstance(s, DisksScreen)), {})
        earlier, warning = await asyncio.to_thread(self.core.earlier_probes, inv)
        if warning:
            self.notify(warning, severity="warning")
        flow = Flow(kind, inv, {**earlier, **known})
        await self.app.push_screen(PickCached(flow) if kind == "remove" else PickSlow(flow))


class DeviceStep(FlowScreen):
    """A step that picks devices from a table: what each is, what it holds, its measured class."""

    def candidates(self) -> list[Device]:
        raise NotImplementedError

    def intro(self) -> str:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.step_bar()
        yield Static(self.intro(), id="pick-intro")
        yield DataTable(id="pick", cursor_type="row", zebra_stripes=True)
        yield Static("", id="pick-current")
        yield Footer()

    def on_mount(self) -> None:
        self.fill()
        self.query_one("#pick", DataTable).focus()

    def columns(self) -> tuple[str, ...]:
        return ("Device", "Size", "Class", "Holds")

    def row(self, dev: Device) -> tuple[object, ...]:
        probe = self.flow.probes.get(probe_key(dev))
        cls = (
            measured_text(probe)
            if probe
            else Text({True: "HDD? (kernel)", False: "SSD? (kernel)", None: "? (kernel)"}[dev.rotational], style="dim")
        )
        return (
            dev.display_path if dev.lvm is not None and dev.lvm.lv else dev.name,
            human_size(dev.size_bytes),
            cls,
            dev.caching.part if dev.caching is not None else dev.state,
        )

    def fill(self) -> None:
        table = self.query_one("#pick", DataTable)
        table.clear(columns=True)
        table.add_columns(*self.columns())
        self.devices = self.candidates()
        for dev in self.devices:
            table.add_row(*self.row(dev), key=dev.name)
        self.show_current()

    @property
    def current(self) -> Device | None:
        table = self.query_one("#pick", DataTable)
        if not self.devices or table.cursor_row >= len(self.devices):
            return None
        return self.devices[table.cursor_row]

    @on(DataTable.RowHighlighted, "#pick")
    def _highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self.show_current()

    def show_current(self) -> None:
        dev = self.current
        self.query_one("#pick-current", Static).update(
            Text("Nothing to choose here: " + self.empty(), style="yellow")
            if dev is None
            else Text.assemble(("Highlighted: ", "bold"), name_of(dev), f" — {dev.in_use_reason}")
        )

    def empty(self) -> str:
        return "no device fits this step. Esc goes back."


def name_of(dev: Device) -> str:
    """An LV by its VG path, anything else by its kernel name with its stable path."""
    if dev.lvm is not None and dev.lvm.lv:
        return dev.display_path
    return dev.name if dev.display_path == dev.devnode else f"{dev.name} ({dev.display_path})"


def _usable(dev: Device) -> bool:
    return not dev.hidden and dev.size_bytes > 0 and dev.kind in ("disk", "partition", "lvm", "md", "dm")


class PickSlow(DeviceStep):
    """Step 1: the slow device the cache goes in front of, a disk, partition or LV."""

    STEP = "Slow device"
    HELP = (
        "Choose the slow device to put a cache in front of: a hard disk, a partition, or an LVM LV (lvmcache "
        "attaches to an LV in place, with its data; bcache needs a device it may format). ↑↓ move, Enter "
        "chooses. A device already in a cache, an LVM PV (choose its LV) or a disk with partitions (choose one) "
        "is refused with the reason."
    )

    def intro(self) -> str:
        return "Which device is slow? Choose the hard disk, partition or LV to put the cache in front of (Enter)."

    def candidates(self) -> list[Device]:
        # bcache devices are listed too, to be refused with their reason (a cache is there already).
        return [
            d
            for d in self.flow.inventory.devices
            if (_usable(d) or (d.kind == "bcache" and not d.hidden))
            and not (d.lvm and d.lvm.role == "pv")
            and not (d.bcache is not None and d.bcache.role == "cache")
        ]

    def refusal(self, dev: Device) -> str | None:
        if dev.caching is not None and dev.caching.remove is not None:
            return (
                f"{dev.display_path} is already cached ({dev.caching.kind}, {dev.caching.state}). cachewise does "
                "not stack a second cache: remove that one first (Remove a cache on the start screen)."
            )
        if dev.caching is not None and dev.caching.kind not in ("dm-crypt", "md"):
            return f"{dev.display_path} is a {dev.caching.part}: {dev.caching.can}"
        if dev.partitions:
            return f"{dev.name} has partitions ({', '.join(dev.partitions)}): choose the one that holds the data."
        if dev.state == "in-use" and dev.lvm is None:
            return (
                f"{dev.display_path} is {dev.in_use_reason}. A cache goes in front of an LV while it is in use "
                "(lvmcache), or in front of a device nothing uses (bcache formats it)."
            )
        return None

    @on(DataTable.RowSelected, "#pick")
    def _chosen(self, _event: DataTable.RowSelected) -> None:
        dev = self.current
        if dev is None:
            return
        refusal = self.refusal(dev)
        if refusal:
            self.notify(refusal + " Nothing was changed.", severity="warning", timeout=12)
            return
        self.flow.slow = dev
        self.app.push_screen(PickFast(self.flow))


class PickFast(DeviceStep):
    """Step 2: the SSD(s) that hold the cache."""

    STEP = "Fast device"
    BINDINGS = [Binding("space", "toggle_mark", "Mark")]
    HELP = (
        "Choose the SSD (or two, for a mirrored cache) that will hold the cache: Space marks, Enter goes on "
        "with the marked ones (or the highlighted one when none is marked). Whatever is on a device it uses is "
        "destroyed; the preview says so before anything runs."
    )

    def __init__(self, flow: Flow) -> None:
        super().__init__(flow)
        self.marked: list[str] = [d.name for d in flow.fast]

    def intro(self) -> str:
        slow = self.flow.slow
        return (
            f"Which SSD caches {slow.display_path if slow else '?'}? Space marks one or two, Enter goes on "
            "(with the highlighted one when none is marked)."
        )

    def columns(self) -> tuple[str, ...]:
        return ("", *super().columns())

    def row(self, dev: Device) -> tuple[object, ...]:
        return ("●" if dev.name in self.marked else " ", *super().row(dev))

    def candidates(self) -> list[Device]:
        from advisor.advice.facts import underlying_disks

        slow = self.flow.slow
        under = {d.name for d in underlying_disks(self.flow.inventory, slow)} if slow else set()
        return [
            d
            for d in self.flow.inventory.devices
            if _usable(d)
            and d.kind in ("disk", "partition", "md")
            and d.name not in under
            and (slow is None or d.name != slow.name)
            and not d.partitions
            and d.caching is None
        ]

    def empty(self) -> str:
        return "no free SSD, partition or md array besides the slow device. Esc goes back."

    def action_toggle_mark(self) -> None:
        dev = self.current
        if dev is None:
            return
        if dev.name in self.marked:
            self.marked.remove(dev.name)
        elif len(self.marked) >= 2:
            self.notify("Two SSDs at most (a mirrored cache); unmark one first.", severity="warning")
            return
        else:
            self.marked.append(dev.name)
        row = self.query_one("#pick", DataTable).cursor_row
        self.fill()
        self.query_one("#pick", DataTable).move_cursor(row=row)

    @on(DataTable.RowSelected, "#pick")
    def _chosen(self, _event: DataTable.RowSelected) -> None:
        inv = self.flow.inventory
        names = self.marked or ([self.current.name] if self.current else [])
        fast = [d for d in (inv.by_name(n) for n in names) if d is not None]
        if not fast:
            return
        busy = [d for d in fast if d.state == "in-use"]
        if busy:
            self.notify(
                f"{busy[0].display_path} is {busy[0].in_use_reason}; a cache needs the whole device. "
                "Nothing was changed.",
                severity="warning",
                timeout=12,
            )
            return
        self.flow.fast = fast
        nxt = MeasureStep(self.flow) if self.flow.kind == "add" else WorkloadStep(self.flow)
        self.app.push_screen(nxt)


class MeasureStep(FlowScreen):
    """Step 3: a short read-only fio probe of each chosen device not measured yet."""

    STEP = "Measure"
    HELP = (
        "cachewise measures each chosen device with a short read-only fio probe (a few seconds each) and "
        "classifies it by its latency (HDD, SATA SSD, NVMe), not by the kernel's rotational flag, which USB "
        "bridges and RAID controllers get wrong. Devices measured before are not probed again. Enter goes on "
        "once the probes are done."
    )

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.step_bar()
        with VerticalScroll(id="measure"):
            yield Static("", id="measure-list")
            yield ProbePanel(id="measure-probes")
            yield Static("", id="measure-next")
            yield Button("Next: the workload", id="measure-go", variant="primary")
        yield Footer()

    def devices(self) -> list[Device]:
        return [d for d in (self.flow.slow, *self.flow.fast) if d is not None]

    def on_mount(self) -> None:
        self.running: set[str] = set()
        todo = [d for d in self.devices() if probe_key(d) not in self.flow.probes]
        if self.core.prober is None or self.core.replay:
            todo = []  # a saved snapshot: its disks are not here to be measured
            self.query_one("#measure-next", Static).update("")
        self._list()
        if todo:
            self.running = {d.name for d in todo}
            self._probe(todo)
        self._next_hint()
        self.query_one("#measure-go", Button).focus()

    def _list(self) -> None:
        text = Text()
        for dev in self.devices():
            probe = self.flow.probes.get(probe_key(dev))
            text.append(f"{dev.display_path}: ", "bold")
            if probe is not None:
                text.append_text(measured_text(probe))
                text.append(f" ({probe.classification.reason})\n")
            elif dev.name in self.running:
                text.append("probing…\n", "cyan")
            elif self.core.replay:
                text.append(
                    "not measured: this is a saved snapshot of another machine (the kernel's flag is used)\n", "yellow"
                )
            else:
                text.append("not measured (the kernel's flag is used)\n", "yellow")
        self.query_one("#measure-list", Static).update(text)

    def _next_hint(self) -> None:
        hint = (
            Text("Probing; each device is read for a few seconds…", style="dim")
            if self.running
            else Text.assemble(("Enter", "bold"), " goes on to the workload.", style="green")
        )
        self.query_one("#measure-next", Static).update(hint)

    @work(thread=True, group="probe", description="probe the chosen devices", exit_on_error=False)
    def _probe(self, devices: list[Device]) -> None:
        probe_each(self, devices)

    @on(ProbeUpdate)
    def _update(self, message: ProbeUpdate) -> None:
        self.query_one(ProbePanel).progress(message.progress)

    @on(ProbeFinished)
    def _finished(self, message: ProbeFinished) -> None:
        self.running.discard(message.device)
        dev = next((d for d in self.devices() if d.name == message.device), None)
        if message.result is not None and dev is not None:
            self.flow.probes[probe_key(dev)] = message.result
        self.query_one(ProbePanel).finished(message.device, message.result, message.error)
        self._list()
        self._next_hint()

    @on(Button.Pressed, "#measure-go")
    def _next(self) -> None:
        if self.running:
            self.notify(f"Still probing {', '.join(sorted(self.running))}; a few seconds more.")
            return
        self.app.push_screen(WorkloadStep(self.flow))


TRACE, OPEN, MEASURED = "trace", "open", "measured"


class WorkloadStep(FlowScreen):
    """Step 4: the workload, traced now, opened from a file, or named by type."""

    STEP = "Workload"
    HELP = (
        "The cache's size and mode follow the workload. Best: trace the slow device for a while (root; the "
        "curve fills in as the trace runs), or open a trace recorded before (cachewise trace, fio iolog, "
        "blkparse text, CSV). Without one, choose the type of workload closest to yours; cachewise then uses "
        "the published findings for it. Enter chooses."
    )

    def compose(self) -> ComposeResult:
        yield Header()
        yield self.step_bar()
        with VerticalScroll(id="workload-step"):
            yield Static("What does the slow device serve? Measure it, or choose the closest type (Enter).")
            yield OptionList(id="workload-choices")
            yield Static("", id="workload-highlighted")
            yield Static("", id="workload-status")
            yield CurveChart(id="workload-curve")
        yield Footer()

    def on_mount(self) -> None:
        self._options()

    def _options(self) -> None:
        from advisor.advice.workloads import WORKLOADS

        choices = self.query_one("#workload-choices", OptionList)
        choices.clear_options()
        a = self.flow.analysis
        if a is not None:
            choices.add_option(Option(Text.assemble(("Use the measured workload: ", "bold"), a.source), id=MEASURED))
        slow = self.flow.slow
        if self.flow.kind == "add" and not self.core.replay:  # a snapshot's devices are not here to trace
            choices.add_option(
                Option(f"Trace {name_of(slow) if slow else 'the slow device'} now for a while (root)", id=TRACE)
            )
        choices.add_option(Option("Open a trace recorded before…", id=OPEN))
        for key, wc in WORKLOADS.items():
            choices.add_option(Option(f"Type: {wc.label}", id=key))
        choices.highlighted = 0
        choices.focus()

    @on(OptionList.OptionHighlighted, "#workload-choices")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.query_one("#workload-highlighted", Static).update(
            Text.assemble(
                ("Highlighted: ", "bold"),
                event.option.prompt if isinstance(event.option.prompt, Text) else Text(str(event.option.prompt)),
            )
        )

    @on(OptionList.OptionSelected, "#workload-choices")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        choice = event.option.id
        if choice == TRACE:
            self.ask_trace()
        elif choice == OPEN:
            self.open_trace()
        else:
            if choice != MEASURED:
                self.flow.analysis, self.flow.workload = None, choice
            self.recommend()

    def _status(self, text: str | Text, style: str = "") -> None:
        self.query_one("#workload-status", Static).update(Text(text, style=style) if isinstance(text, str) else text)

    def _analysed(self, analysis: Analysis) -> None:
        self.flow.analysis, self.flow.workload = analysis, None
        self._show_curve(analysis)
        total = analysis.read_requests + analysis.write_requests
        self._status(
            Text.assemble(
                ("Measured: ", "bold"),
                f"{analysis.requests:,} requests, "
                f"{analysis.read_requests / max(1, total):.0%} reads, footprint "
                f"{human_size(analysis.footprint_bytes)}. Choose 'Use the measured workload'.",
            )
        )
        self._options()

    def _show_curve(self, analysis: Analysis) -> None:
        self.query_one("#workload-curve", CurveChart).show(
            Curve(analysis.curve_sizes_blocks, analysis.curve_hit_ratio, analysis.block_size)
        )

    @work(group="workload", exclusive=True, description="open a trace", exit_on_error=False)
    async def open_trace(self) -> None:
        from advisor.workload.traces import TraceError
        from screens.analysis import OpenTrace

        path = await self.app.push_screen_wait(OpenTrace())
        if path is None:
            return
        self._status(f"Analysing {path}…", "dim")
        try:
            analysis, meta = await asyncio.to_thread(self.core.analyze, path)
        except (TraceError, Refused) as exc:
            self._status(f"{exc}", "red")
            return
        warning = await asyncio.to_thread(self.core.record_analysis, analysis, path, meta)
        if warning:
            self.notify(warning, severity="warning")
        self._analysed(analysis)

    @work(group="workload", exclusive=True, description="ask for the trace window", exit_on_error=False)
    async def ask_trace(self) -> None:
        seconds = await self.app.push_screen_wait(TraceWindow())
        if seconds:
            self.trace(seconds)

    @work(thread=True, group="trace", exclusive=True, description="trace the slow device", exit_on_error=False)
    def trace(self, seconds: float) -> None:
        """Trace the slow device into the state directory, re-analysing what is there so far every
        few seconds for the live curve; then the full analysis."""
        from advisor.workload.traces import TraceError

        slow = self.flow.slow
        state = self.core.state_dir
        if slow is None:
            return
        if state is None:
            self.app.call_from_thread(
                self._status,
                "This session has no state directory to keep a trace in; "
                "nothing was traced. Open a trace file instead.",
                "red",
            )
            return
        out = state / "traces" / f"{slow.name}-{time.strftime('%Y%m%d-%H%M%S')}.trace"
        out.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        last_preview = [started]

        def progress(p: object) -> None:
            now = time.monotonic()
            events = getattr(p, "events", 0)
            self.app.call_from_thread(
                self._status,
                f"Tracing {slow.devnode}: {now - started:.0f} of {seconds:g} s, {events:,} requests so far…",
                "cyan",
            )
            if now - last_preview[0] >= self.PREVIEW_SECONDS and events:
                last_preview[0] = now
                self.app.call_from_thread(self._preview, out)  # in its own thread: the capture goes on

        try:
            self.core.trace(slow.devnode, out, seconds, on_progress=progress)
            analysis, meta = self.core.analyze(out)
        except (TraceError, Refused) as exc:
            self.app.call_from_thread(self._status, f"{exc}", "red")
            return
        self.app.warn_from_thread(self.core.record_analysis(analysis, out, meta))  # type: ignore[attr-defined]
        self.app.call_from_thread(self._analysed, analysis)

    PREVIEW_SECONDS = 10.0  # the live curve is drawn again from the trace so far this often

    @work(thread=True, group="trace-preview", exclusive=True, description="the curve so far", exit_on_error=False)
    def _preview(self, path: Path) -> None:
        from advisor.workload.traces import TraceError

        try:
            partial, _meta = self.core.analyze(path)
        except (TraceError, Refused):
            return  # too little yet
        self.app.call_from_thread(self._show_curve, partial)

    @work(group="recommend-inputs", exclusive=True, description="gather the facts", exit_on_error=False)
    async def recommend(self) -> None:
        from screens.recommend import RecommendScreen

        flow = self.flow
        if flow.slow is None or not flow.fast:
            return
        try:
            inputs, warnings = await asyncio.to_thread(
                self.core.recommend_inputs,
                flow.inventory,
                flow.slow.name,
                [f.name for f in flow.fast],
                analysis=flow.analysis,
                known_probes=flow.probes,
                workload=flow.workload,
            )
        except Refused as exc:
            self.notify(str(exc), severity="error", timeout=12)
            return
        for warning in warnings:
            self.notify(warning, severity="warning")
        await self.app.push_screen(RecommendScreen(inputs, flow.inventory, flow=flow))


class TraceWindow(ModalScreen[float | None]):
    """How long to trace the slow device for."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="trace-window"):
            yield Static(
                "Trace for how many seconds? A whole cycle of the workload is best (an hour, a day: "
                "cachewise trace --duration); a minute shows the shape."
            )
            yield Input("60", id="trace-seconds", type="number")
            yield Static("", id="trace-window-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            seconds = float(event.value)
        except ValueError:
            seconds = 0.0
        if not 5 <= seconds <= 86400:
            self.query_one("#trace-window-error", Static).update(Text("Between 5 and 86400 seconds.", style="red"))
            return
        self.dismiss(seconds)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PickCached(DeviceStep):
    """Remove, step 1: the cached device to take the cache from."""

    STEP = "Cached device"
    HELP = (
        "The caches cachewise can remove: lvmcache and dm-writecache LVs and bcache devices. Each shows its mode "
        "and its dirty data, which is written back to the slow device before the cache is detached. Enter "
        "previews the plan; nothing runs before you type the device's name."
    )

    def intro(self) -> str:
        return "Which cache goes? Dirty data is flushed to the slow device first, with a countdown (Enter)."

    def __init__(self, flow: Flow) -> None:
        super().__init__(flow)
        self.dirty: dict[str, str] = {}  # cache name (VG/LV, bcacheN) -> its dirty data, as the kernel says now

    def columns(self) -> tuple[str, ...]:
        return ("Device", "Size", "Cache", "State", "Dirty")

    @staticmethod
    def cache_name(dev: Device) -> str:
        return f"{dev.lvm.vg}/{dev.lvm.lv}" if dev.lvm is not None and dev.lvm.lv else dev.name

    def row(self, dev: Device) -> tuple[object, ...]:
        c = dev.caching
        assert c is not None
        dirty = self.dirty.get(self.cache_name(dev))
        if dirty is None:  # not read (yet): what discovery saw (bcache's dirty_data), else a wait
            dirty = (
                dev.bcache.dirty_data
                if dev.bcache is not None and dev.bcache.dirty_data
                else ("not reported" if self.dirty else "reading…")
            )
        return (
            dev.display_path if dev.lvm is not None and dev.lvm.lv else dev.name,
            human_size(dev.size_bytes),
            c.kind,
            Text(c.state, style="bold red" if c.degraded else ""),
            dirty,
        )

    def fill(self) -> None:
        super().fill()
        if self.devices and not self.core.replay:  # a snapshot's caches are not here to read
            self._read_dirty()

    @work(thread=True, group="dirty", exclusive=True, description="read each cache's dirty data", exit_on_error=False)
    def _read_dirty(self) -> None:
        found = {}
        for ref, sample in self.core.status():
            if sample is None:
                found[ref.name] = "unreadable"
            elif sample.dirty_bytes is not None:
                found[ref.name] = human_size(sample.dirty_bytes) if sample.dirty_bytes else "none"
        self.app.call_from_thread(self._dirty_read, found)

    def _dirty_read(self, found: dict[str, str]) -> None:
        self.dirty = found
        table = self.query_one("#pick", DataTable)
        last = len(self.columns()) - 1
        for i, dev in enumerate(self.devices):
            table.update_cell_at(Coordinate(i, last), self.row(dev)[-1])

    def candidates(self) -> list[Device]:
        return [
            d
            for d in self.flow.inventory.devices
            if d.caching is not None
            and d.caching.remove is not None
            and (d.bcache is None or d.bcache.role == "bcache")
        ]

    def empty(self) -> str:
        return "this machine has no lvmcache, dm-writecache or bcache cache cachewise can remove. Esc goes back."

    def on_screen_resume(self) -> None:
        """Back from a removal: the list shows what is cached now, once the disks are read again."""
        if not getattr(self, "_shown", False):  # the first showing: the list is fresh
            self._shown = True
            return
        if self.is_mounted:
            self.query_one("#pick", DataTable).clear()
            self.devices = []
            self.query_one("#pick-current", Static).update(Text("Reading the caches again…", style="dim"))
            self._rescan()

    @work(group="rescan", exclusive=True, description="rescan after a removal", exit_on_error=False)
    async def _rescan(self) -> None:
        self.flow.inventory = await asyncio.to_thread(self.core.scan)
        self.fill()

    @on(DataTable.RowSelected, "#pick")
    def _chosen(self, _event: DataTable.RowSelected) -> None:
        from screens.apply import ApplyScreen

        dev = self.current
        if dev is None:
            return
        try:
            plan = self.core.plan(self.flow.inventory, "remove", path=dev.devnode, free_ssd=True)
        except Refused as exc:
            self.notify(str(exc), severity="warning", timeout=12)
            return
        self.app.push_screen(ApplyScreen(plan, flow=self.flow))


class SavePlan(FlowScreen):
    """Plan only, last step: the plan's preview, saved as JSON or an Ansible playbook."""

    STEP = "Save the plan"
    HELP = (
        "The plan, as it would run: what it destroys, then the exact commands. Choose JSON (for `sudo cachewise "
        "apply FILE` on this machine) or an Ansible playbook, name the file and press Enter. Nothing on this "
        "machine is changed; the plan is checked against the system again when it is applied."
    )

    def __init__(self, flow: Flow, plan: Plan) -> None:
        super().__init__(flow)
        self.plan = plan
        self.saved: Path | None = None

    def compose(self) -> ComposeResult:
        from cachewise.render import plan_preview

        target = re.sub(r"[^\w.-]+", "-", self.plan.target.removeprefix("/dev/")).strip("-")
        yield Header()
        yield self.step_bar()
        with VerticalScroll(id="save-plan"):
            yield Static(plan_preview(self.plan), id="plan-preview")
            yield Static("Save it as", id="save-title")
            yield Select(
                [("JSON, for `cachewise apply`", "json"), ("Ansible playbook", "ansible")],
                value="json",
                allow_blank=False,
                id="save-format",
            )
            yield Input(str(Path.cwd() / f"cachewise-plan-{target}.json"), id="save-path")
            yield Static(Text("Enter in the file name saves it.", style="dim"), id="save-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#save-path", Input).focus(scroll_visible=False)

    @on(Select.Changed, "#save-format")
    def _format(self, event: Select.Changed) -> None:
        box = self.query_one("#save-path", Input)
        path = Path(box.value)
        box.value = str(path.with_suffix(".yml" if event.value == "ansible" else ".json"))

    @on(Input.Submitted, "#save-path")
    def _save(self, event: Input.Submitted) -> None:
        fmt = str(self.query_one("#save-format", Select).value)
        path = Path(event.value.strip()).expanduser()
        try:
            how = self.core.save_plan(self.plan, path, fmt)
        except Refused as exc:
            self.query_one("#save-status", Static).update(Text(str(exc), style="red"))
            return
        self.saved = path
        self.query_one("#save-status", Static).update(Text(f"Saved to {path}. {how}", style="bold green"))
