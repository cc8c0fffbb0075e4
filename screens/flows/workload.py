"""Add and Plan only: the workload, traced now, opened from a file, or named by type."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Input, OptionList, Static
from textual.widgets.option_list import Option

from advisor.advice.workloads import WORKLOADS
from advisor.errors import CachewiseError
from advisor.units import human_size
from advisor.workload.analysis import Analysis
from advisor.workload.capture import CaptureProgress
from cachewise.core import workload
from cachewise.core.advise import AdviceRequest, Declared, prepare
from screens.files import TRACES, PathField, user_path
from screens.flows.steps import FlowScreen, name_of
from screens.phrases import word
from screens.widgets import Curve, CurveChart

TRACE, OPEN, MEASURED = "trace", "open", "measured"


class WorkloadStep(FlowScreen):
    """Step 4: the workload, traced now, opened from a file, or named by type."""

    STEP = "Workload"
    HELP = (
        "The cache's size and mode follow the workload. Best: trace the slow device for a while (root; the "
        "curve fills in as the trace runs), or open a trace recorded before (cachewise trace, fio iolog, "
        "blkparse text, CSV: type its path, Tab completes it, Ctrl+O browses the folders). Without one, choose "
        "the type of workload closest to yours; cachewise then uses the published findings for it. Enter "
        "chooses; once a trace is analysed, the recommendation follows by itself."
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
            self.ask_path()
        else:
            if choice != MEASURED:
                self.flow.analysis, self.flow.workload = None, choice
            self.recommend()

    def _status(self, text: str | Text, style: str = "") -> None:
        self.query_one("#workload-status", Static).update(Text(text, style=style) if isinstance(text, str) else text)

    def _analysed(self, analysis: Analysis) -> None:
        """A trace opened or recorded: shown here, then on to the recommendation (Esc comes back)."""
        self.flow.analysis, self.flow.workload = analysis, None
        self._show_curve(analysis)
        total = analysis.read_requests + analysis.write_requests
        self._status(
            Text.assemble(
                ("Measured: ", "bold"),
                f"{analysis.requests:,} requests, "
                f"{analysis.read_requests / max(1, total):.0%} reads, footprint "
                f"{human_size(analysis.footprint_bytes)}.",
            )
        )
        self._options()
        self.recommend()

    def _show_curve(self, analysis: Analysis) -> None:
        self.query_one("#workload-curve", CurveChart).show(
            Curve(analysis.curve_sizes_blocks, analysis.curve_hit_ratio, analysis.block_size)
        )

    @work(group="workload-path", exclusive=True, description="ask for the trace's path", exit_on_error=False)
    async def ask_path(self) -> None:
        """The trace's path box, under the choices (put there the first time it is asked for)."""
        found = self.query("#workload-trace-path")
        if not found:
            field = PathField(
                wanted=TRACES, input_id="workload-trace-path", placeholder="the trace's path: Tab completes it"
            )
            await self.query_one("#workload-step").mount(field, after="#workload-choices")
        self.query_one("#workload-trace-path", Input).focus()
        self._status("Which trace? Type its path and press Enter (Tab completes it, Ctrl+O browses).", "bold")

    @on(Input.Submitted, "#workload-trace-path")
    def _open(self, event: Input.Submitted) -> None:
        event.stop()
        path = user_path(event.value)
        if not event.value.strip() or not path.is_file():
            self._status(f"{path} is not a readable file; nothing was opened. Tab completes a path.", "red")
            return
        self.open_trace(path)

    @work(group="workload", exclusive=True, description="open a trace", exit_on_error=False)
    async def open_trace(self, path: Path) -> None:
        self._status(f"Analysing {path}…", "dim")
        try:
            analysis, meta = await asyncio.to_thread(workload.analyze, self.core, path)
        except CachewiseError as exc:
            self._status(word(exc), "red")
            return
        warning = await asyncio.to_thread(workload.record_analysis, self.core, analysis, path, meta)
        if warning is not None:
            self.notify(word(warning), severity="warning")
        self._analysed(analysis)

    @work(group="workload", exclusive=True, description="ask for the trace window", exit_on_error=False)
    async def ask_trace(self) -> None:
        seconds = await self.nav.ask_trace_seconds()
        if seconds:
            self.trace(seconds)

    @work(thread=True, group="trace", exclusive=True, description="trace the slow device", exit_on_error=False)
    def trace(self, seconds: float) -> None:
        """Trace the slow device into the state directory, re-analysing what is there so far every
        few seconds for the live curve; then the full analysis."""
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

        def progress(p: CaptureProgress) -> None:
            now = time.monotonic()
            events = p.events
            self.app.call_from_thread(
                self._status,
                f"Tracing {slow.devnode}: {now - started:.0f} of {seconds:g} s, {events:,} requests so far…",
                "cyan",
            )
            if now - last_preview[0] >= self.PREVIEW_SECONDS and events:
                last_preview[0] = now
                self.app.call_from_thread(self._preview, out)  # in its own thread: the capture goes on

        try:
            workload.trace(self.core, slow.devnode, out, seconds, on_progress=progress)
            analysis, meta = workload.analyze(self.core, out)
        except CachewiseError as exc:
            self.app.call_from_thread(self._status, word(exc), "red")
            return
        self.services.warn_from_thread(workload.record_analysis(self.core, analysis, out, meta))
        self.app.call_from_thread(self._analysed, analysis)

    PREVIEW_SECONDS = 10.0  # the live curve is drawn again from the trace so far this often

    @work(thread=True, group="trace-preview", exclusive=True, description="the curve so far", exit_on_error=False)
    def _preview(self, path: Path) -> None:
        try:
            partial, _meta = workload.analyze(self.core, path)
        except CachewiseError:
            return  # too little yet
        self.app.call_from_thread(self._show_curve, partial)

    @work(group="recommend-inputs", exclusive=True, description="gather the facts", exit_on_error=False)
    async def recommend(self) -> None:
        flow = self.flow
        if flow.slow is None or not flow.fast:
            return
        request = AdviceRequest(
            flow.slow.name,
            tuple(f.name for f in flow.fast),
            analysis=flow.analysis,
            declared=Declared(workload=flow.workload),  # type: ignore[arg-type]
            known_probes=flow.probes,
            inventory=flow.inventory,
        )
        try:
            prepared = await asyncio.to_thread(prepare, self.core, request)
        except CachewiseError as exc:
            self.refuse(exc, "error")
            return
        for warning in prepared.warnings:
            self.notify(word(warning), severity="warning")
        self.nav.recommend(prepared.inputs, flow.inventory, flow=flow)
