"""Workload analysis in the TUI: open a trace, then see the curve, the hot data and the mix."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from advisor.workload.analysis import Analysis
from cachewise.render import ANALYSIS_LEGEND, analysis_curve, analysis_report
from screens.widgets import Curve, CurveChart


class AnalysisScreen(Screen[None]):
    """One analysis: summary, hot-data ratio and the LRU hit-ratio curve."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    HELP = (
        "One trace's analysis: how much data it touched (the footprint), the read/write mix, the sequential "
        "share, request sizes, and the miss-ratio curve: the hit ratio an LRU cache of each size would have "
        "had. The hot-data ratio says how much of the data served 80/90/95% of the I/O. Back on the Disks "
        "screen, c recommends a cache with this analysis as the workload."
    )

    def __init__(self, analysis: Analysis) -> None:
        super().__init__()
        self.analysis = analysis

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="analysis"):
            yield Static(analysis_report(self.analysis, curve=False), id="analysis-report")
            a = self.analysis
            yield CurveChart(Curve(*analysis_curve(a), legend=ANALYSIS_LEGEND), height=13, id="analysis-curve")
        yield Footer()
