"""Widgets more than one screen uses: the hit-ratio curve that fills its width (Analysis,
Recommend, Warm-up and the flows' workload step), and the step indicator of a guided flow."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.widgets import Static

from cachewise.render import curve_plot


@dataclass(frozen=True)
class Curve:
    """A hit-ratio curve to draw: sizes in ``block_size`` units, hit ratios, and the chosen size."""

    sizes: list[int]
    hits: list[float]
    block_size: int = 1
    mark: int | None = None  # in block_size units
    mark_label: str = "recommended"
    legend: str = "LRU hit ratio"  # what the hit ratios are


class CurveChart(Static):
    """The curve across the width the widget has, drawn again on every resize: cache size (log)
    across, hit ratio up, the chosen size marked and named, the observed hit ratio as a dot."""

    AXIS = 7  # the tick labels take 6 columns, a scrollbar or border 1

    def __init__(self, curve: Curve | None = None, height: int = 9, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.curve = curve
        self.plot_height = height
        self.observed: float | None = None

    def show(self, curve: Curve | None, observed: float | None = None) -> None:
        self.curve = curve
        self.observed = observed
        self.draw()

    def on_mount(self) -> None:
        self.draw()

    def on_resize(self, _event: events.Resize) -> None:
        self.draw()

    def draw(self) -> None:
        c = self.curve
        if c is None or not c.sizes:
            self.update(Text("(no curve)", style="dim") if c is not None else "")
            return
        width = (self.content_size.width or 62) - self.AXIS
        self.update(
            Text(
                curve_plot(
                    c.sizes,
                    c.hits,
                    c.block_size,
                    width=width,
                    height=self.plot_height,
                    mark=c.mark,
                    mark_label=c.mark_label,
                    observed=self.observed,
                    legend=c.legend,
                )
            )
        )
