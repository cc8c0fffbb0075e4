"""What every step of a guided flow shares: the step bar on top, Esc for Back, and (for the
steps that choose devices) the table of candidates with what each is and holds."""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from advisor.disks.devices import Device
from advisor.disks.eligibility import probe_key
from advisor.units import human_size
from screens.base import CoreScreen
from screens.flows.model import Flow
from screens.names import device_label
from screens.probing import measured_text


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
    """The device as the TUI names it everywhere: its stable name, the kernel name beside it."""
    return device_label(dev)
