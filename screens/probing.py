"""Probing from the Disks screen and the Measure step: live progress and the results."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from advisor.disks.devices import Device
from advisor.disks.probe import ProbeProgress, ProbeResult
from advisor.errors import CachewiseError
from advisor.units import rate
from cachewise.core import measure
from screens.base import CoreScreen
from screens.phrases import word


class ProbeUpdate(Message):
    """Progress of one device's probe (posted from the probing thread; coalesced per device)."""

    def __init__(self, progress: ProbeProgress) -> None:
        super().__init__()
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProbeUpdate) and message.progress.device == self.progress.device


class ProbeFinished(Message):
    def __init__(self, device: str, result: ProbeResult | None, error: str | None) -> None:
        super().__init__()
        self.device = device
        self.result = result
        self.error = error


def measured_text(result: ProbeResult | None) -> Text:
    if result is None:
        return Text("")
    c = result.classification
    return Text(c.device_class + ("!" if c.disagreements else ""), style="yellow" if c.disagreements else "green")


def probe_each(screen: CoreScreen, devices: list[Device]) -> None:
    """Probe the devices one at a time (each is measured alone), from a thread worker of
    ``screen``: progress and each result (or the failure, as a sentence) are posted to it."""

    def progress(p: ProbeProgress) -> None:
        screen.post_message(ProbeUpdate(p))

    services = screen.services
    for dev in devices:
        try:
            result, warning = measure.probe(screen.core, dev, services.probe_seconds, progress)
        except Exception as exc:  # noqa: BLE001 - every failure is shown, none is fatal
            screen.post_message(
                ProbeFinished(dev.name, None, word(exc) if isinstance(exc, CachewiseError) else str(exc))
            )
            continue
        services.warn_from_thread(warning)
        screen.post_message(ProbeFinished(dev.name, result, None))


class ProbePanel(Static):
    """One line per device being probed: phase, elapsed time, running IOPS; then the verdicts."""

    def __init__(self, fade_after: float | None = None, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.lines: dict[str, Text] = {}
        self.running: set[str] = set()
        # The results also stay where the devices are listed: the panel closes itself this long
        # after the last probe ended (a results panel nobody could close was in the way).
        self.fade_after = fade_after
        self._fade: Timer | None = None

    def progress(self, p: ProbeProgress) -> None:
        self.running.add(p.device)
        if self._fade is not None:
            self._fade.stop()
            self._fade = None
        # fio's last job and its report can run past the budget: say so, not "5.6/4.5 s".
        clock = f"{p.elapsed:4.1f}/{p.total:g} s" if p.elapsed <= p.total else f"{p.total:g} s, finishing"
        self.lines[p.device] = Text.assemble(
            (f"{p.device}: ", "bold"),
            f"{p.description}  ",
            (clock, "cyan"),
            f"  {rate(p.iops)}",
        )
        self._refresh()

    def finished(self, device: str, result: ProbeResult | None, error: str | None) -> None:
        if result is not None:
            c = result.classification
            line = Text.assemble((f"{device}: ", "bold"), measured_text(result), f" ({c.confidence}) — {c.reason}")
            for extra in (*c.disagreements, *result.notes):
                line.append(f"\n  {extra}", style="yellow")
        else:
            line = Text.assemble((f"{device}: ", "bold"), (error or "probe failed", "red"))
        self.lines[device] = line
        self.running.discard(device)
        self._refresh()
        if not self.running and self.fade_after is not None:
            self._fade = self.set_timer(self.fade_after, self.close)

    def close(self) -> None:
        """Clear the finished results and hide the panel (a new probe opens it again)."""
        if self.running:
            return
        self.lines.clear()
        self._fade = None
        self._refresh()

    def _refresh(self) -> None:
        grid = Table.grid()
        for line in self.lines.values():
            grid.add_row(line)
        self.update(grid)
        self.display = bool(self.lines)
