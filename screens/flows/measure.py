"""Add, step 3: a short read-only fio probe of each chosen device not measured yet."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Button, Footer, Header, Static

from advisor.disks.devices import Device
from advisor.disks.eligibility import probe_key
from screens.flows.steps import FlowScreen
from screens.probing import ProbeFinished, ProbePanel, ProbeUpdate, measured_text, probe_each


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
        self.nav.step(self.flow, "Workload")
