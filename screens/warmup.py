"""The Warm-up screen: one cache warming up and flushing, live. The numbers at a glance, charts
over time (fill, hit ratio against the prediction, dirty data, cache against origin IOPS), and
a stalled flush with its likely causes. Samples come from cachewise.core.watch in a thread worker; the
history recorded in the last hours is replayed through the same tracker first, so the charts
survive a restart."""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Footer, Header, Static
from textual.worker import Worker, get_current_worker

from advisor.errors import CachewiseError
from advisor.health.recheck import cited
from advisor.units import duration, human_size, rate
from advisor.watch.figures import Figures
from advisor.watch.sampler import CacheRef
from cachewise.core import demo, watch
from cachewise.core.recheck import Rechecked, RecheckRequest, recheck
from cachewise.render import stall_text
from screens.base import CoreScreen
from screens.flows.model import Flow
from screens.flows.steps import StepBar
from screens.phrases import word
from screens.widgets import Curve, CurveChart

HISTORY_SECONDS = 6 * 3600.0  # the recorded past the charts start with
STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800)  # seconds per chart column, the smallest that fits
BLOCKS = " ▁▂▃▄▅▆▇█"


def percent(v: float | None) -> str:
    return "–" if v is None else f"{v:.1%}"


def size(v: float | None) -> str:
    return "–" if v is None else human_size(int(v))


def per_second(v: float | None) -> str:
    return "–" if v is None else rate(v, "/s")


@dataclass(frozen=True)
class Series:
    """One chart: the value drawn as bars, and a second one drawn as marks over them."""

    title: str
    value: Callable[[Figures], float | None]
    fmt: Callable[[float | None], str]
    top: float | None = None  # a fixed scale (ratios); otherwise the largest value shown
    name: str = ""
    overlay: Callable[[Figures], float | None] | None = None
    overlay_name: str = ""
    mark: str = "•"


def read_hit(f: Figures) -> float | None:
    """The read hit ratio this interval; bcache, whose counters move every few seconds, keeps
    its last step's figure for a minute rather than showing a gap between steps."""
    if f.read_hit_ratio is not None or f.hit_ratio is not None:
        return f.read_hit_ratio if f.read_hit_ratio is not None else f.hit_ratio
    if f.kind == "bcache" and f.hit_ratio_age_seconds is not None and f.hit_ratio_age_seconds < 60:
        return f.hit_ratio_last
    return None


CHARTS = (
    Series("Fill", lambda f: f.fill, percent, top=1.0),
    # The prediction is of reads: dm-cache counts them apart, bcache counts only them.
    Series(
        "Read hit ratio (─ predicted)",
        read_hit,
        percent,
        top=1.0,
        overlay=lambda f: f.predicted_hit_ratio,
        overlay_name="predicted",
        mark="─",
    ),
    Series("Dirty data", lambda f: f.dirty_bytes, size),
    Series(
        "IOPS: cache █ origin •",
        lambda f: f.cache_iops,
        per_second,
        name="cache",
        overlay=lambda f: f.origin_iops,
        overlay_name="origin",
    ),
)


def columns(
    figs: Sequence[Figures], width: int, step: float, get: Callable[[Figures], float | None]
) -> list[float | None]:
    """The last value in each column's ``step`` seconds, the newest column on the right."""
    out: list[float | None] = [None] * width
    end = figs[-1].t
    for f in figs[bisect.bisect_left(figs, end - width * step, key=lambda x: x.t) :]:
        i = width - 1 - int((end - f.t) // step)
        v = get(f)
        if 0 <= i < width and v is not None:
            out[i] = v
    return out


def plot(values: list[float | None], marks: list[float | None], height: int, top: float, mark: str) -> list[Text]:
    """Bars in eighths of a row, with ``marks`` drawn over them at their own height."""
    lines = []
    for row in range(height):
        base = (height - 1 - row) * 8
        cells, marked = [], []
        for i, (v, m) in enumerate(zip(values, marks, strict=True)):
            if m is not None and min(height - 1, int(m / top * height)) == height - 1 - row:
                cells.append(mark)
                marked.append(i)
            elif v is None:
                cells.append(" ")
            else:
                cells.append(BLOCKS[max(0, min(8, round(min(1.0, v / top) * height * 8) - base))])
        line = Text("".join(cells), style="green", no_wrap=True)
        for i in marked:
            line.stylize("bold yellow", i, i + 1)
        lines.append(line)
    return lines


class Chart(Widget):
    """One series over time, scaled to the width it has: its label line holds the latest value
    (and the overlay's), the minimum and maximum shown, and the time span."""

    def __init__(self, series: Series, figs: list[Figures], interval: float) -> None:
        super().__init__()
        self.series, self.figs, self.interval = series, figs, interval
        self.border_title = series.title

    def render(self) -> Group | Text:
        width, height = self.content_size.width, self.content_size.height - 1
        s = self.series
        if not self.figs or width < 2:
            return Text("waiting for samples…", style="dim")
        span = self.figs[-1].t - self.figs[0].t
        step = next((x for x in STEPS if x >= self.interval and x * width >= span), STEPS[-1])
        values = columns(self.figs, width, step, s.value)
        marks: list[float | None] = columns(self.figs, width, step, s.overlay) if s.overlay else [None] * width
        shown = [v for v in values if v is not None]
        top = s.top or max(shown + [m for m in marks if m is not None], default=0.0) or 1.0
        label = [f"{s.name} {s.fmt(s.value(self.figs[-1]))}".strip()]
        if s.overlay:
            label.append(f"{s.overlay_name} {s.fmt(s.overlay(self.figs[-1]))}")
        if shown:
            label.append(f"min {s.fmt(min(shown))} max {s.fmt(max(shown))}")
        label.append(f"last {duration(step * width)}")
        head = Text("  ".join(label), no_wrap=True, overflow="ellipsis")
        return Group(head, *plot(values, marks, height, top, s.mark)) if height > 0 else head


def glance(ref: CacheRef, f: Figures | None) -> Table:
    """The latest figures as a two-column grid: observed next to predicted."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    if f is None:
        grid.add_row("Cache", Text(f"Reading {ref.name}…", style="dim"))
        return grid
    grid.add_row("Cache", f"{ref.kind}, {f.mode or 'mode unknown'}, state {f.state}")
    if f.fill is None:
        grid.add_row("Fill", "not reported by this cache")
    else:
        grow = f", +{size(f.fill_rate_bytes)}/s" if f.fill_rate_bytes else ""
        grid.add_row("Fill", f"{percent(f.fill)} ({size(f.used_bytes)} of {size(f.capacity_bytes)}){grow}")
    predicted = (
        (percent(f.predicted_hit_ratio), "bold yellow")
        if f.predicted_hit_ratio is not None
        else "none recorded for this cache"
    )
    if f.hit_ratio is None and f.hit_ratio_last is not None and f.hit_ratio_age_seconds is not None:
        # bcache folds its counters every few seconds: the last step they moved, and its age.
        now: tuple[str | tuple[str, str], ...] = (
            (percent(f.hit_ratio_last), "bold"),
            f" when the counters last moved, {duration(f.hit_ratio_age_seconds)} ago, ",
        )
    else:
        now = ((percent(f.hit_ratio), "bold"), " this interval, ")
    grid.add_row(
        "Hit ratio",
        Text.assemble(
            "observed ",
            *now,
            (percent(f.hit_ratio_total), "bold"),
            " since start",
            *((", reads ", (percent(f.read_hit_ratio), "bold")) if f.read_hit_ratio is not None else ()),
            "   predicted of reads ",
            predicted,
        ),
    )
    grid.add_row(
        "IOPS", f"asked {per_second(f.iops)}, cache {per_second(f.cache_iops)}, origin {per_second(f.origin_iops)}"
    )
    if f.dirty_bytes is None:
        dirty = "not reported by this cache"
    elif not f.dirty_bytes:
        dirty = "none (clean)"
        if f.state == "dirty":  # bcache: its state says dirty about 30 s after the last block is written back
            dirty = "none, though bcache still says dirty until its writeback thread notices (about 30 s)"
    elif f.flush_rate_bytes and f.flush_rate_bytes > 0:
        dirty = (
            f"{size(f.dirty_bytes)}, flushing {size(f.flush_rate_bytes)}/s, about {duration(f.flush_eta_seconds)} left"
        )
    else:
        dirty = f"{size(f.dirty_bytes)}, not falling"
    grid.add_row("Dirty", dirty)
    warm = f.warmup
    if f.warmup_eta_seconds:
        warm += f", about {duration(f.warmup_eta_seconds)} to steady"
    if f.predicted_eta_seconds is not None:
        warm += f" (the model said {duration(f.predicted_eta_seconds)} left)"
    grid.add_row("Warm-up", warm)
    return grid


class Sampled(Message):
    """New figures from the sampling thread; ``gone``: the cache was not found any more."""

    def __init__(self, figures: list[Figures], gone: bool = False, warning: CachewiseError | None = None) -> None:
        super().__init__()
        self.figures, self.gone, self.warning = figures, gone, warning


def recheck_text(r: Rechecked) -> Text:
    """The Re-check panel: the verdict, its reasons with their sources, and its plan."""
    v = r.verdict
    text = Text(v.summary, style="bold green" if v.action == "keep" else "bold yellow")
    for reason in v.reasons:
        text.append(f"\n• {cited(reason)}")
    if r.plan is not None:
        text.append(f"\na previews the plan: {r.plan.title}.", style="bold")
    elif r.refused is not None:
        text.append(f"\nNo plan: {word(r.refused)}", style="red")
    if v.how:
        text.append(f"\n{v.how}")
    if v.action != "keep" and r.plan is None and v.plan is None:
        text.append("\nWith a capture of the same days, `cachewise recheck --trace` sizes it from its curve.")
    return text


class RecheckDone(Message):
    def __init__(self, result: Rechecked) -> None:
        super().__init__()
        self.result = result


class WarmupScreen(CoreScreen):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("k", "recheck", "Re-check"),
        Binding("a", "recheck_plan", "Plan it", show=False),
    ]
    HELP = (
        "A cache, live: how full it is and how fast it fills, the hit ratio this interval and since the "
        "start (against the prediction when cachewise made it), the I/O served by the cache and by the slow "
        "device, and dirty data with the time left to flush it, or a stalled flush and its likely causes. "
        "A cache that failed or lost its SSD is said at the top, with what it means for the data. "
        "It only reads the kernel's counters. k re-checks the cache: from what the kernel counted since it was "
        "made and what it was predicted to do, keep it, grow or shrink it, change its mode, remove it, or can't "
        "judge yet; a then previews the plan that does it."
    )
    DEFAULT_CSS = """
    WarmupScreen #glance, WarmupScreen #warmup-note { height: auto; padding: 0 1; }
    WarmupScreen #stall { height: auto; max-height: 8; border: round $warning; padding: 0 1; }
    WarmupScreen #trouble { height: auto; border: heavy $error; padding: 0 1; }
    WarmupScreen #recheck { height: auto; max-height: 12; border: round $accent; padding: 0 1; }
    WarmupScreen #charts { grid-size: 2 2; height: 1fr; min-height: 6; }
    WarmupScreen Chart { border: round $primary; height: 1fr; }
    WarmupScreen #warmup-curve { height: auto; border: round $primary; padding: 0 1; }
    WarmupScreen.short #warmup-curve { display: none; }
    """
    SHORT = 34  # rows below which the curve gives its room to the live charts

    def __init__(
        self,
        ref: CacheRef,
        interval: float = 1.0,
        record: bool = True,
        flow: Flow | None = None,
        curve: Curve | None = None,
    ) -> None:
        super().__init__()
        self.ref, self.interval, self.record = ref, interval, record
        self.flow = flow  # the last step of Add an SSD cache
        self.curve = curve  # the prediction's curve, with the cache's size marked
        self.figures: list[Figures] = []
        self.gone = False
        self._warned = False
        self.rechecked: Rechecked | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        if self.flow is not None:
            yield StepBar(self.flow, "Warm-up")
        yield Static(glance(self.ref, None), id="glance")
        note = Static("", id="warmup-note")
        note.display = False
        yield note
        trouble = Static("", id="trouble")  # a failed cache, a dead SSD: shown at once, above all else
        trouble.display = False
        yield trouble
        with VerticalScroll(id="recheck") as panel:
            panel.border_title = "Re-check"
            panel.display = False
            yield Static("", id="recheck-text")
        with VerticalScroll(id="stall") as stall:
            stall.border_title = "Flush stalled"
            stall.display = False
            yield Static("", id="stall-text")
        if self.curve is not None:
            chart = CurveChart(replace(self.curve, mark_label="this cache"), height=7, id="warmup-curve")
            chart.border_title = "Predicted hit ratio by cache size; ● is what the kernel reports now"
            yield chart
        with Grid(id="charts"):
            for series in CHARTS:
                yield Chart(series, self.figures, self.interval)
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < self.SHORT, "short")

    def on_mount(self) -> None:
        r = self.ref
        self.sub_title = f"Warm-up of {r.name} ({r.kind}: slow {r.origin or '?'}, fast {r.cache or '?'})"
        if self.core.recorded:
            self.sub_title = f"Warm-up of {r.name} ({r.kind}), played back"
        self._sample()

    @work(thread=True, exclusive=True, group="warmup", description="sample the cache", exit_on_error=False)
    def _sample(self) -> None:
        worker, core, name = get_current_worker(), self.core, self.ref.name
        session = watch.session(core, [self.ref], record=self.record)
        past = watch.recorded_samples(core, self.ref, since=time.time() - HISTORY_SECONDS)
        self.post_message(Sampled(session.replay(past)))
        # Leaving the screen cancels this worker; the session then records what is still pending.
        for tick in session.follow(self.interval, wait=worker.cancelled_event.wait):
            figs = [f for s, f in tick.figures if s.target == name]
            self.post_message(Sampled(figs, gone=not figs, warning=session.warning))
            if demo.ended(core, self.ref):  # a recording played to its end: nothing more to show
                return

    @on(Sampled)
    def _sampled(self, message: Sampled) -> None:
        if message.warning is not None and not self._warned:
            self._warned = True
            self.notify(word(message.warning), severity="warning")
        if message.gone:
            self.gone = True
            self._note(
                f"{self.ref.name} is no longer a cache on this machine (uncached, detached or removed); "
                "sampling stopped. Nothing was changed."
            )
        if not message.figures:
            return
        if not self.gone and demo.ended(self.core, self.ref):
            self.gone = True
            self._note(
                f"The recording of {self.ref.name} ends here. Esc goes back to the disks as they were when it "
                "was recorded; nothing on this machine was read or changed."
            )
        self.figures.extend(message.figures)
        del self.figures[: bisect.bisect_left(self.figures, self.figures[-1].t - HISTORY_SECONDS, key=lambda f: f.t)]
        latest = self.figures[-1]
        self.query_one("#glance", Static).update(glance(self.ref, latest))
        trouble = self.query_one("#trouble", Static)
        trouble.display = bool(latest.trouble)
        if latest.trouble:
            trouble.border_title = f"{self.ref.name}: {latest.state}"
            trouble.update(Text(latest.trouble[0].upper() + latest.trouble[1:] + ".", style="bold"))
        stall = self.query_one("#stall")
        stall.display = latest.stall is not None
        if latest.stall is not None:
            self.query_one("#stall-text", Static).update(Text(stall_text(latest), style="yellow"))
        for chart in self.query(Chart):
            chart.refresh()
        for curve in self.query(CurveChart):
            curve.show(curve.curve, latest.hit_ratio if latest.hit_ratio is not None else latest.hit_ratio_total)

    def action_recheck(self) -> None:
        if self.core.recorded:  # its one reading would take a frame the charts never show
            self.notify("The re-check reads this machine's caches; a recording played back has none to re-check.")
            return
        self._show_panel(Text(f"Re-checking {self.ref.name}...", style="dim"))
        self._recheck()

    @work(thread=True, exclusive=True, group="recheck", description="re-check the cache", exit_on_error=False)
    def _recheck(self) -> None:
        result = recheck(self.core, RecheckRequest(self.ref.name, record=False))
        if not get_current_worker().is_cancelled:  # pressed again meanwhile, or the screen left
            self.post_message(RecheckDone(result))

    @on(RecheckDone)
    def _rechecked(self, message: RecheckDone) -> None:
        self.rechecked = message.result
        self._show_panel(recheck_text(message.result))

    def _show_panel(self, text: Text) -> None:
        self.query_one("#recheck").display = True
        self.query_one("#recheck-text", Static).update(text)

    def action_recheck_plan(self) -> None:
        r = self.rechecked
        if r is None:
            self.notify("Press k to re-check the cache first.")
        elif r.plan is None:
            self.notify("The re-check names no plan cachewise makes.")
        else:
            self.nav.apply(r.plan)

    def _note(self, text: str) -> None:
        note = self.query_one("#warmup-note", Static)
        note.update(Text(text, style="bold red"))
        note.display = True

    def worker_failed(self, worker: Worker[object], error: BaseException) -> None:
        if worker.group == "recheck":
            said = word(error) if isinstance(error, CachewiseError) else f"{error}. Nothing was changed."
            self._show_panel(Text(f"The re-check could not be made: {said}", style="red"))
            return
        if worker.group != "warmup":
            super().worker_failed(worker, error)
            return
        why = error.what if isinstance(error, CachewiseError) else error
        self._note(
            f"Reading {self.ref.name} failed: {why}. Nothing was changed; press Esc and open the screen again to retry."
        )
