"""What the guided flows' pick lists share: devices named one way (screens/names.py), and only
what can be planned offered, the rest listed greyed below it with the reason it cannot."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable, Static

from advisor.disks.devices import Device
from advisor.errors import CachewiseError
from screens.flows.model import Flow
from screens.flows.steps import DeviceStep
from screens.names import device_label, fold
from screens.phrases import TUI

GREY = "dim"
NARROW = 120  # terminals narrower than this fold long names in the table (the Highlighted line has them whole)
FOLD = 24


class PickStep(DeviceStep):
    """A step that picks devices: the ones the gate lets through first, then the others greyed."""

    def __init__(self, flow: Flow) -> None:
        super().__init__(flow)
        self.why_not: dict[str, CachewiseError] = {}  # kernel name -> why it cannot be chosen

    def choices(self) -> list[tuple[Device, CachewiseError | None]]:
        """Every device the step lists, each with why it cannot be chosen (None: it can)."""
        raise NotImplementedError

    def candidates(self) -> list[Device]:
        listed = self.choices()
        self.why_not = {d.name: why for d, why in listed if why is not None}
        return [d for d, why in listed if why is None] + [d for d, why in listed if why is not None]

    def fill(self) -> None:
        """The table, rows as tall as their folded names."""
        table = self.query_one("#pick", DataTable)
        table.clear(columns=True)
        table.add_columns(*self.columns())
        self.devices = self.candidates()
        for dev in self.devices:
            table.add_row(*self.row(dev), key=dev.name, height=None)
        self.show_current()

    @property
    def offered(self) -> list[Device]:
        """What can be chosen."""
        return [d for d in self.devices if d.name not in self.why_not]

    def label(self, dev: Device) -> str:
        return device_label(dev, self.flow.inventory)

    def name_cell(self, dev: Device) -> str:
        """The device's name for the table: folded on a narrow terminal."""
        name = self.label(dev)
        return fold(name, FOLD) if self.app.size.width < NARROW else name

    def row(self, dev: Device) -> tuple[object, ...]:
        return self.greyed(dev, (self.name_cell(dev), *super().row(dev)[1:]))

    def greyed(self, dev: Device, cells: tuple[object, ...]) -> tuple[object, ...]:
        """A row as listed: greyed, its last cell saying it is not offered, when it cannot be chosen."""
        if dev.name not in self.why_not:
            return cells
        grey = tuple(Text(c.plain if isinstance(c, Text) else str(c), style=GREY) for c in cells)
        return (*grey[:-1], Text("not offered", style=GREY))

    def reason(self, dev: Device) -> str:
        """Why ``dev`` cannot be chosen, and what to do, in the TUI's words ("" when it can)."""
        why = self.why_not.get(dev.name)
        if why is None:
            return ""
        return " ".join(p for p in (TUI.sentence(why), TUI.next_steps(why.next)) if p)

    def show_current(self) -> None:
        dev = self.current
        current = self.query_one("#pick-current", Static)
        none = Text("Nothing to choose here: " + self.empty(), style="yellow")
        if dev is None:
            current.update(none)
        elif dev.name in self.why_not:
            why = Text.assemble(
                ("Highlighted: ", "bold"), self.label(dev), (f" — not offered: {self.reason(dev)}", "yellow")
            )
            current.update(why if self.offered else Text.assemble(none, "\n", why))
        else:
            current.update(Text.assemble(("Highlighted: ", "bold"), self.label(dev), f" — {dev.in_use_reason}"))

    def refused(self, dev: Device) -> bool:
        """Enter on a greyed device: say why, and stay."""
        why = self.why_not.get(dev.name)
        if why is not None:
            self.refuse(why)
        return why is not None
