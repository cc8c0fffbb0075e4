"""What the front ends show, made once for both: rich tables and reports (printed by the CLI,
shown in Static widgets by the TUI) and the lines of an apply's log."""

from __future__ import annotations

import math
import re
import textwrap
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from advisor.advice.findings import finding
from advisor.backends import listed
from advisor.disks.devices import Device, Inventory
from advisor.disks.probe import ProbeResult
from advisor.errors import shown
from advisor.units import duration, human_size, latency, rate

if TYPE_CHECKING:  # numpy stays unloaded for the commands that only print tables
    from advisor.advice.config import CacheConfig
    from advisor.advice.model import CurveView, Reason, Recommendation
    from advisor.apply.run import Event
    from advisor.plan.model import Plan
    from advisor.watch.figures import Figures
    from advisor.watch.sampler import CacheRef, Sample
    from advisor.workload.analysis import Analysis
    from advisor.workload.periods import Periods
    from advisor.workload.replay import ReplayResult

STATE_STYLE = {"free": "green", "has-data": "yellow", "in-use": "red"}


def rotational_word(dev: Device) -> str:
    return {True: "yes", False: "no", None: "?"}[dev.rotational]


def state_text(dev: Device) -> Text:
    """A device's state as the scan's JSON says it (``free``, ``has-data``, ``in-use``), then why,
    without the words that repeat the state ('in use because ...'); its part in a cache below."""
    reason = dev.in_use_reason.replace("\n", "\\n")
    for said in ("in use because ", "has data: ", "free: "):
        reason = reason.removeprefix(said)
    text = Text(dev.state, style=f"bold {STATE_STYLE[dev.state]}")
    text.append(f": {reason}" if reason else "", style=STATE_STYLE[dev.state])
    c = dev.caching
    if c is not None:
        text.append(
            f"\n{c.kind}: {c.part}" + (f"; {c.state}" if c.state else ""), style="bold red" if c.degraded else "cyan"
        )
    return text


# What a table of six columns takes besides its cells: the borders and a space either side of each cell.
_CHROME = 1 + 6 * 3
_SIZE_WIDTH = 10  # "1023.9 GiB"
_STATE_MIN = 24


class DevicesTable:
    """The scan's devices grouped by disk, each with its stable path. Where the terminal holds a
    table whose paths and roles fit whole (no_wrap), a table; where it does not (80 columns and
    by-id paths), one device after another, its path on a line of its own: a path, a device
    name, a by-id path or a UUID is never broken, so it can be copied as printed."""

    def __init__(self, inv: Inventory, show_all: bool = False) -> None:
        self.inv, self.rows = inv, inv.tree(show_all)

    def _where(self, dev: Device) -> str:
        return shown(dev.stable_path or dev.identity or "")

    def _widths(self) -> tuple[int, int, int, int]:
        """(device, bus, role, the longest word of a state) over the rows."""
        device = bus = role = word = 0
        for depth, dev in self.rows:
            device = max(device, 2 * depth + (2 if depth else 0) + len(shown(dev.name)))
            if self._where(dev):
                device = max(device, 2 * depth + (2 if depth else 0) + len(self._where(dev)))
            bus, role = max(bus, len(dev.transport or "")), max(role, len(dev.role))
            word = max([word, *map(len, state_text(dev).plain.split())])
        return device, bus, role, word

    def fits(self, width: int) -> bool:
        device, bus, role, word = self._widths()
        return device + _SIZE_WIDTH + max(bus, 3) + 3 + max(role, 4) + max(word, _STATE_MIN) + _CHROME <= width

    def table(self) -> Table:
        """The devices as one table, paths and roles unbroken (no_wrap), the state wrapped at spaces."""
        _, _, _, word = self._widths()
        table = Table(title=f"Block devices on {shown(self.inv.hostname)}", title_justify="left")
        table.add_column("Device / stable path", no_wrap=True)
        table.add_column("Size", justify="right", no_wrap=True)
        table.add_column("Bus", no_wrap=True)
        table.add_column("Rot", no_wrap=True)
        table.add_column("Role", no_wrap=True)
        table.add_column("State", min_width=max(word, 8))
        for depth, dev in self.rows:
            indent = "  " * depth
            cell = Text(indent + ("└ " if depth else "") + shown(dev.name), style="bold")
            if self._where(dev):
                cell.append("\n" + indent + ("  " if depth else "") + self._where(dev), style="dim")
            table.add_row(
                cell,
                human_size(dev.size_bytes),
                dev.transport or "",
                rotational_word(dev),
                shown(dev.role),
                state_text(dev),
            )
        return table

    def listing(self) -> Group:
        """One device after another: name and facts, the stable path alone on its line, the state."""
        lines: list[Text | Padding] = [Text(f"Block devices on {shown(self.inv.hostname)}", style="italic")]
        for depth, dev in self.rows:
            indent = "  " * depth
            head = Text(indent + ("└ " if depth else ""))
            head.append(shown(dev.name), style="bold")
            facts = [human_size(dev.size_bytes), dev.transport or "", f"rot {rotational_word(dev)}"]
            head.append("  " + "  ".join(f for f in facts if f) + "  role ")
            head.append(shown(dev.role), style="bold")
            lines.append(head)
            inner = indent + ("    " if depth else "  ")
            if self._where(dev):
                lines.append(Text(inner + self._where(dev), style="dim", no_wrap=True, overflow="ignore"))
            lines.append(Padding(state_text(dev), (0, 0, 0, len(inner)), expand=False))
        return Group(*lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.table() if self.fits(options.max_width) else self.listing()


def devices_table(inv: Inventory, show_all: bool = False) -> DevicesTable:
    """The scan's devices for a terminal of any width (:class:`DevicesTable`)."""
    return DevicesTable(inv, show_all)


def probe_table(results: list[ProbeResult]) -> Table:
    table = Table(title="Measured devices", title_justify="left")
    table.add_column("Device", no_wrap=True)
    table.add_column("Kernel says", no_wrap=True)
    table.add_column("Measured", no_wrap=True)
    table.add_column("p50 / p99 (QD1)", justify="right", no_wrap=True)
    table.add_column("IOPS (QD32)", justify="right", no_wrap=True)
    table.add_column("Seq MB/s", justify="right", no_wrap=True)
    table.add_column("Why", ratio=1)
    for r in results:
        qd1, qd32, seq = r.phase("randread-qd1"), r.phase("randread-qd32"), r.phase("seqread-1m")
        kernel = {True: "rotational", False: "non-rotational", None: "?"}[r.kernel_rotational]
        c = r.classification
        measured = Text(f"{c.device_class} ({c.confidence})", style="yellow" if c.disagreements else "green")
        lat = (
            f"{latency(qd1.lat_p50_ms)} / {latency(qd1.lat_p99_ms)}"
            if qd1 and qd1.lat_p50_ms and qd1.lat_p99_ms
            else "-"
        )
        table.add_row(
            r.device,
            kernel,
            measured,
            lat,
            f"{qd32.iops:,.0f}" if qd32 else "-",
            f"{seq.mbps:,.0f}" if seq else "-",
            c.reason,
        )
    return table


def curve_plot(
    sizes: list[int],
    hits: list[float],
    block_size: int,
    width: int = 60,
    height: int = 13,
    mark: int | None = None,
    mark_label: str = "recommended",
    observed: float | None = None,
    legend: str = "LRU hit ratio",
) -> str:
    """The hit-ratio curve as text, ``width`` columns of plot after a 6-column axis: cache size
    (log scale) across, hit ratio up, ticks at round percentages. ``mark`` (a size in blocks)
    draws a column of ``│`` at the chosen cache size and names that size under the axis
    (``mark_label``); ``observed`` (a hit ratio the kernel reports) puts a ``●`` on that column."""
    if not sizes:
        return "(no curve)"
    width = max(16, width)
    lo, hi = math.log(sizes[0]), math.log(max(sizes[-1], sizes[0] + 1))

    def column(size: float) -> int:
        return min(width - 1, max(0, int((math.log(size) - lo) / (hi - lo) * (width - 1)))) if hi > lo else 0

    grid = [[" "] * width for _ in range(height)]
    mx = column(mark) if mark is not None and mark > 0 else None
    if mx is not None:
        for row in grid:
            row[mx] = "│"
    for size, hit in zip(sizes, hits, strict=True):
        x = column(size)
        y = min(height - 1, int(hit * (height - 1) + 0.5))
        for yy in range(y + 1):
            grid[height - 1 - yy][x] = (
                "█" if yy == y else (grid[height - 1 - yy][x] if grid[height - 1 - yy][x] != " " else "·")
            )
    if mx is not None and observed is not None:
        grid[height - 1 - min(height - 1, max(0, int(observed * (height - 1) + 0.5)))][mx] = "●"
    # Ticks at quarters when the rows divide into quarters, else at the top, middle and bottom.
    steps = height - 1
    every = steps // 4 if steps % 4 == 0 else (steps // 2 if steps % 2 == 0 else steps)
    lines = []
    for i, row in enumerate(grid):
        label = f"{1 - i / steps:4.0%} " if i % every == 0 else "      "
        lines.append(label + "".join(row))
    left, right = human_size(sizes[0] * block_size), human_size(sizes[-1] * block_size)
    lines.append("      " + left + " " * max(1, width - len(left) - len(right)) + right)
    if mx is not None and mark is not None:
        seen = f", observed {observed:.0%} ●" if observed is not None else ""
        tag = f"↑ {mark_label}: {human_size(mark * block_size)}{seen}"
        tag = tag if len(tag) <= width else f"↑ {human_size(mark * block_size)}"
        lines.append("      " + " " * min(mx, max(0, width - len(tag))) + tag)
    # Which curve it is, always: on a narrow chart the legend folds onto more lines rather than
    # being dropped (issue 30: at 80 columns the chart said only "hit ratio").
    legends = (f"cache size (log scale) → {legend}", f"size (log) → {legend}")
    fits = next((t for t in legends if len(t) <= width), None)
    lines += ["      " + t for t in ([fits] if fits else textwrap.wrap(legends[-1], width, break_on_hyphens=False))]
    return "\n".join(lines)


def analysis_report(a: Analysis, width: int = 60, curve: bool = True) -> Group:
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    total = a.read_requests + a.write_requests
    if a.source_format == "capture":
        summary.add_row(
            "Trace",
            f"{a.source} (a capture: {a.lines:,} requests kept of {a.requests:,}, sampled at "
            f"{a.curve_sample_rate:.3g} by where they fall; sizes below are scaled to the whole device)",
        )
    else:
        summary.add_row("Trace", f"{a.source} ({a.source_format}, {a.lines:,} lines, {a.bad_lines} malformed)")
    # A trace without timestamps (a CSV of offsets, an iolog without times) has an order, no rate.
    span = f"over {a.duration_s:,.1f} s ({rate(a.iops)})" if a.duration_s > 0 else "(the trace has no times: no rate)"
    summary.add_row(
        "Requests", f"{a.requests:,} {span}; {a.read_requests / total:.0%} reads, {a.write_requests / total:.0%} writes"
    )
    summary.add_row(
        "Footprint", f"{human_size(a.footprint_bytes)} ({a.footprint_blocks:,} blocks of {human_size(a.block_size)})"
    )
    summary.add_row("Sequential", f"{a.sequential_share:.0%} of requests continue one of the last 64 streams")
    if a.bypassed_requests:
        summary.add_row(
            "Bypassed",
            f"{a.bypassed_requests:,} requests ({human_size(a.bypassed_bytes)}) in streams past "
            f"{human_size(a.sequential_cutoff)}: a cache lets them through; not in the curve",
        )
    summary.add_row(
        "First touches",
        f"{a.cold_miss_share:.1%} of the curve's accesses (misses a warm cache has paid)"
        + ("; the trace is too short to judge: record a longer window" if a.too_short else ""),
    )
    summary.add_row("Sizes", ", ".join(f"{k}: {v:,}" for k, v in a.size_histogram.items()))
    hot = ", ".join(
        f"{s:.0%} of I/O → {f:.1%} of the data ({human_size(n * a.block_size)})"
        for s, f, n in zip(a.hot_shares, a.hot_footprint_fraction, a.hot_blocks, strict=True)
    )
    summary.add_row("Hot data", hot)
    summary.add_row(
        "Zipf fit", f"alpha ≈ {a.zipf_alpha:.2f}" if a.zipf_alpha is not None else "too few repeated blocks to fit"
    )
    if a.smq_sizes_blocks:
        summary.add_row("dm-cache (smq)", smq_row(a))
    if a.bcache_sizes_bytes:
        summary.add_row("bcache", bcache_row(a))
    for example in a.bad_examples:
        summary.add_row("Malformed", Text(example, style="yellow"))
    if a.periods is not None:
        for label, text in periods_rows(a.periods):
            summary.add_row(label, text)
    if not curve:
        return Group(summary)
    return Group(summary, Text(""), Text(curve_plot(*analysis_curve(a), width=width, legend=ANALYSIS_LEGEND)))


PHASES_SHOWN = 12


def periods_rows(p: Periods) -> list[tuple[str, str]]:
    """A capture across time: the hours it covers (the curve and the sizes above are drawn from
    them all), its phases (a daily one once), and each day against the day before."""
    when = "%a %Y-%m-%d %H:%M" if p.window_seconds >= 3600 else "%Y-%m-%d %H:%M:%S"
    rows = [
        (
            "Captured",
            f"{duration(p.captured_seconds)} from {time.strftime(when, time.localtime(p.first))} to "
            f"{time.strftime(when, time.localtime(p.last))}, in windows of {duration(p.window_seconds)}; "
            "the curve and sizes are drawn from all of it",
        )
    ]
    shown_daily: set[tuple[str, str]] = set()
    phases = []
    for ph in p.phases:
        if ph.daily is not None:
            if (ph.kind, ph.daily) in shown_daily:
                continue
            shown_daily.add((ph.kind, ph.daily))
            phases.append(f"{ph.kind} daily {ph.daily}: {rate(ph.iops)}, {ph.read_share:.0%} reads")
        else:
            phases.append(
                f"{ph.name}: {rate(ph.iops)}, {ph.read_share:.0%} reads, {human_size(ph.footprint_bytes)} touched"
            )
    more = len(phases) - PHASES_SHOWN
    phases = phases[:PHASES_SHOWN] + ([f"... and {more} more (--json lists every phase)"] if more > 0 else [])
    rows += [("Phases" if i == 0 else "", text) for i, text in enumerate(phases)]
    if p.days and p.sizes_bytes:
        mid = len(p.sizes_bytes) // 2
        for i, day in enumerate(p.days):
            name = time.strftime("%a %Y-%m-%d", time.localtime(day.start))
            text = f"{day.requests:,} requests, {human_size(day.footprint_bytes)} touched"
            if day.hot_carried is not None and day.reread is not None:
                text += f"; {day.hot_carried:.0%} of the day before's hot data again ({day.reread:.0%} of its accesses)"
            if len(day.read_hit_ratio) > mid:
                size = human_size(p.sizes_bytes[mid])
                text += f"; a cache of {size} empty at midnight: {day.read_hit_ratio[mid]:.0%} read hits"
            rows.append(("Days" if i == 0 else "", f"{name}: {text}"))
    return rows


def smq_row(a: Analysis) -> str:
    """The smq replay's read hit ratio at each cache size replayed (and its time to 63%)."""
    chunk = a.smq_chunk_size or 0
    return _replay_row([n * chunk for n in a.smq_sizes_blocks], a.smq_read_hit_ratio, a.smq_seconds_63)


def bcache_row(a: Analysis) -> str:
    """The bcache replay's read hit ratio (of the reads it does not bypass) at each cache size."""
    return _replay_row(a.bcache_sizes_bytes, a.bcache_read_hit_ratio, a.bcache_seconds_63) + " (reads not bypassed)"


def _replay_row(sizes: list[int], hits: list[float | None], seconds: list[float | None]) -> str:
    def one(size: int, hit: float | None, t63: float | None) -> str:
        if hit is None:
            return f"{human_size(size)}: not settled"
        return f"{human_size(size)}: {hit:.0%}" + (f" ({duration(t63)} to 63%)" if t63 is not None else "")

    cells = [one(*x) for x in zip(sizes, hits, seconds, strict=True)]
    return "read hit ratio replayed, from empty: " + ", ".join(cells)


# The Analysis chart (CLI and TUI): the LRU curve as the trace ran, every first touch a miss.
ANALYSIS_LEGEND = "LRU hit ratio as traced (first touches miss)"


def analysis_curve(a: Analysis) -> tuple[list[int], list[float], int]:
    """(sizes in blocks, hit ratios, block size) of an analysis's chart."""
    return a.curve_sizes_blocks, a.curve_hit_ratio, a.block_size


def prediction_curve(rec: Recommendation, config: CacheConfig | None = None) -> tuple[CurveView, int | None] | None:
    """The curve a configuration's predicted hit ratio is read from (its backend's, by SSD bytes)
    with its size to mark, so the chart's value at the mark is the number the text gives; for no
    configuration, or a backend without a curve (a cache of writes), the workload's curve."""
    config = config or rec.config
    if config is not None and config.backend in rec.backend_curves:
        return rec.backend_curves[config.backend], config.size_bytes
    if rec.curve is None:
        return None
    return rec.curve, config.effective_bytes if config is not None else None


VERDICT_STYLE = {
    "cache": "bold green",
    "move-to-ssd": "bold cyan",
    "dont-cache": "bold yellow",
    "cant-judge": "bold magenta",
}


def config_table(cfg: CacheConfig) -> Table:
    """The numbers of a cache configuration, one per row."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("Backend", cfg.label)
    t.add_row(
        "Cache size",
        f"{human_size(cfg.size_bytes)} (holds about {human_size(cfg.effective_bytes)} of hot data; "
        f"{human_size(cfg.fast_space_bytes)} of SSD in all)",
    )
    if cfg.chunk_size_bytes:
        t.add_row("Chunk", human_size(cfg.chunk_size_bytes))
    if cfg.metadata_size_bytes:
        t.add_row(
            "Metadata", f"{human_size(cfg.metadata_size_bytes)} (+ {human_size(cfg.spare_metadata_bytes or 0)} spare)"
        )
    if cfg.policy:
        t.add_row("Policy", cfg.policy)
    if cfg.sequential_cutoff_bytes is not None:
        t.add_row("sequential_cutoff", human_size(cfg.sequential_cutoff_bytes))
    if cfg.writeback_percent is not None:
        t.add_row("writeback_percent", str(cfg.writeback_percent))
    if cfg.writecache_block_size:
        t.add_row("Block size", f"{cfg.writecache_block_size} bytes")
    if cfg.predicted_hit_ratio is not None:
        t.add_row("Predicted hit ratio", f"{cfg.predicted_hit_ratio:.0%}")
    t.add_row("Expected speed-up", f"about {cfg.expected_speedup:g}x ({cfg.speedup_basis})")
    if cfg.warmup is not None:
        w = cfg.warmup
        when = f" ({duration(w.seconds_63)} / {duration(w.seconds_95)})" if w.seconds_63 is not None else ""
        full = ""
        if w.reads_63_full is not None and w.reads_63_full != w.reads_63:
            full = f"; from a cache full of older data, {w.reads_63_full:,} reads to 63%" + (
                f" ({duration(w.seconds_63_full)})" if w.seconds_63_full is not None else ""
            )
        t.add_row("Warm-up", f"{w.reads_63:,} reads to 63%, {w.reads_95:,} to 95% of the hot data{when}{full}")
    return t


def reason_lines(reasons: tuple[Reason, ...], style: str = "") -> list[Text]:
    out = []
    for r in reasons:
        line = Text("• ", style=style)
        line.append(r.text, style=style)
        if r.findings:
            line.append(f"  [{', '.join(r.findings)}]", style="dim")
        out.append(line)
    return out


def recommendation_report(rec: Recommendation, next_steps: Sequence[str] = ()) -> Group:
    """The recommendation for a terminal; ``next_steps``: its next steps in the front end's words."""
    parts: list[Table | Text] = [Text(rec.summary, style=VERDICT_STYLE[rec.verdict]), Text("")]
    if rec.config is not None:
        parts += [config_table(rec.config), Text("")]
    parts.append(Text("Why", style="bold underline"))
    parts += reason_lines(rec.reasons)
    if rec.warnings:
        parts += [Text(""), Text("Warnings", style="bold underline")]
        parts += reason_lines(rec.warnings, style="yellow")
    if rec.runner_ups:
        parts += [Text(""), Text("Other options", style="bold underline")]
        for o in rec.runner_ups:
            line = Text(f"• {o.summary}")
            if o.tradeoff:
                line.append(f"; {o.tradeoff}", style="dim")
            parts.append(line)
    if next_steps:
        parts += [Text(""), Text("Next", style="bold underline")] + [Text(f"• {step}") for step in next_steps]
    shown = prediction_curve(rec)
    if shown is not None and shown[0].sizes_bytes:
        view, mark = shown
        parts += [Text(""), Text(curve_plot(view.sizes_bytes, view.hit_ratio, 1, mark=mark, legend=view.label))]
    parts += [Text(""), Text("Sources", style="bold underline")]
    for fid in rec.cited:
        f = finding(fid)
        parts.append(Text(f"{fid}: {f.citation}", style="dim"))
    return Group(*parts)


def plan_preview(plan: Plan) -> Group:
    """A plan as a dry run: what it destroys and the exact commands first, then the layout
    before and after, the space and the time."""
    parts: list[Table | Text] = [Text(plain(plan.title), style="bold"), Text("")]
    parts.append(Text("Destroys", style="bold underline"))
    parts += [Text(f"  {plain(d)}", style="red") for d in plan.destroys] or [Text("  nothing (no data is overwritten)")]
    parts.append(Text(""))
    # A step that writes a label is destructive; on a device that holds nothing it destroys nothing.
    mark = (
        Text(" (destructive)", style="red")
        if plan.destroys
        else Text(" (overwrites the device, which holds no data)", style="yellow")
    )
    # A command's words wrap at spaces, and its column is at least as wide as its longest word
    # (a by-id path), so no path is cut inside: what is copied from the screen is what runs. The
    # What column folds rather than cutting with an ellipsis: nothing of it is lost either.
    longest = max((len(w) for s in plan.steps for argv in (s.argv, *s.undo) for w in argv), default=10)
    t = _CommandsTable(longest, title="Commands (nothing has run)", title_justify="left", show_lines=False)
    t.add_column("#", justify="right")
    t.add_column("What", overflow="fold", ratio=1)
    t.add_column("Command", style="cyan", overflow="fold")
    for i, step in enumerate(plan.steps, 1):
        what = Text(plain(step.description))
        if step.destructive:
            what.append_text(mark)
        command = Text(plain(step.command))
        for undo in step.undo_commands:  # what a roll back would run, shown as well
            command.append(f"\nundo: {plain(undo)}", style="dim")
        t.add_row(str(i), what, command)
    parts += [t, Text("")]
    # The plan's own words (from the file, for a plan read from one): shown as text, never as
    # markup or terminal control.
    for label, rows in (("Before", plan.layout_before), ("After", plan.layout_after)):
        parts.append(Text(label, style="bold underline"))
        parts += [Text(f"  {plain(r)}") for r in rows]
    if plan.space:
        parts.append(Text("Space", style="bold underline"))
        parts += [
            Text(f"  {SPACE_WORDS.get(k) or plain(k.replace('_', ' '))}: {human_size(v)}")
            for k, v in plan.space.items()
        ]
    # Only a plan with a step that writes dirty data back can take longer than its commands.
    flushes = any(s.progress for s in plan.steps)
    parts.append(
        Text(
            f"Expected time: about {plan.expected_seconds:.0f} s"
            + (" (longer while dirty blocks flush)" if flushes else "")
        )
    )
    parts += [Text(f"Note: {plain(n)}", style="dim") for n in plan.notes]
    return Group(*parts)


class _CommandsTable(Table):
    """The preview's table of commands: on a narrow console the Command column gets the width of
    the longest word (a by-id path) plus room, and the What column the rest; on a wide one both
    take what they need."""

    def __init__(self, longest: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.longest = longest

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        what, command = self.columns[-2], self.columns[-1]
        wide = options.max_width >= 140
        command.width = None if wide else max(20, min(self.longest + 6, options.max_width - 24))
        what.ratio = None if wide else 1  # a ratio would stretch the table across a wide console
        yield from super().__rich_console__(console, options)


# The plan's space figures, as a person says them (plan.space's keys are the recipes').
SPACE_WORDS = {
    "cache_bytes": "cache",
    "backing_bytes": "slow device (backing)",
    "metadata_bytes": "cache metadata",
    "spare_metadata_bytes": "LVM's spare metadata",
    "ssd_bytes_used": "taken on the SSD in all",
    "ssd_bytes": "the SSD's size",
}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: str) -> str:
    """Text with every control character (an escape sequence's ESC, a carriage return) shown
    as its code, so that nothing a file says can move the cursor or hide a line."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def event_line(e: Event) -> str:
    """One line of an apply's log: a command as it runs, a step done or skipped, flush progress."""
    if e.kind == "progress" and e.flush is not None:
        f = e.flush
        if f.unit == "blocks":
            line = f"  … {f.dirty:,} dirty blocks to write back"
            speed = f"{f.rate:,.0f} blocks/s" if f.rate and f.rate > 0 else ""
        else:
            line = f"  … {f.kernel_text or human_size(f.dirty)} dirty data to write back (state {f.state})"
            speed = f"{human_size(int(f.rate))}/s" if f.rate and f.rate > 0 else ""
        if f.stalled_seconds is not None:
            return line + f"; no progress for {duration(f.stalled_seconds)} (see `cachewise watch` for why)"
        if speed and f.eta_seconds is not None:
            return line + f"; {speed}, about {duration(f.eta_seconds)} left"
        return line
    return {
        "skip": f"= {e.step.description} (already done)",
        "run": f"$ {e.message}",
        "ok": f"  ok: {e.step.description}",
        "undo": f"$ {e.message}",
    }.get(e.kind, e.message)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def status_table(rows: list[tuple[CacheRef, Sample | None]]) -> Table:
    """`cachewise status`: every cache on the host, one row each."""
    table = Table(title="Caches on this machine", title_justify="left")
    for column in ("cache", "kind", "mode", "state", "fill", "hits", "dirty", "slow", "fast"):
        table.add_column(column, no_wrap=column in ("cache", "kind", "mode", "slow", "fast"))
    for ref, s in rows:
        if s is None:
            table.add_row(ref.name, ref.kind, "–", "unreadable", "", "", "", ref.origin or "", ref.cache or "")
            continue
        fill = s.used_bytes / s.capacity_bytes if s.used_bytes is not None and s.capacity_bytes else None
        table.add_row(
            ref.name,
            s.kind,
            s.mode or "–",
            s.state,
            _percent(fill),
            _percent(s.hit_ratio),
            "–" if s.dirty_bytes is None else human_size(s.dirty_bytes),
            ref.origin or "–",
            ref.cache or "–",
        )
    if not rows:
        table.caption = f"No {listed()} device on this machine."
    troubles = [f"{ref.name}: {s.trouble}." for ref, s in rows if s is not None and s.trouble]
    if troubles:
        table.caption = "\n".join(troubles)
        table.caption_justify = "left"
        table.caption_style = "bold red"
    return table


def watch_line(f: Figures) -> str:
    """One line of `cachewise watch`: fill, hit ratio against the prediction, I/O, dirty data."""
    parts = [f"{f.target}"]
    if f.fill is not None:
        grow = f" +{human_size(int(f.fill_rate_bytes))}/s" if f.fill_rate_bytes else ""
        parts.append(f"fill {f.fill:.1%}{grow}")
    hit = f"hit {_percent(f.hit_ratio)}"
    if f.hit_ratio is None and f.hit_ratio_last is not None and f.hit_ratio_age_seconds is not None:
        hit = f"hit {_percent(f.hit_ratio_last)} {duration(f.hit_ratio_age_seconds)} ago"
    if f.hit_ratio_total is not None:
        hit += f" (since start {_percent(f.hit_ratio_total)})"
    if f.read_hit_ratio is not None:
        hit += f", reads {_percent(f.read_hit_ratio)}"
    if f.predicted_hit_ratio is not None:
        hit += f" predicted {_percent(f.predicted_hit_ratio)} of reads"
    parts.append(hit)
    io = [
        f"{name} {rate(v)}"
        for name, v in (("asked", f.iops), ("cache", f.cache_iops), ("origin", f.origin_iops))
        if v is not None
    ]
    if io:
        parts.append(", ".join(io))
    if f.dirty_bytes:
        dirty = f"dirty {human_size(f.dirty_bytes)}"
        if f.flush_rate_bytes and f.flush_rate_bytes > 0:
            dirty += f" falling {human_size(int(f.flush_rate_bytes))}/s, about {duration(f.flush_eta_seconds)} left"
        parts.append(dirty)
    elif f.dirty_bytes == 0:
        # bcache keeps its state "dirty" about 30 s after the last dirty block is written back.
        parts.append("no dirty data, bcache still says dirty" if f.state == "dirty" else "clean")
    if f.warmup == "filling":
        eta = f" about {duration(f.warmup_eta_seconds)} to steady" if f.warmup_eta_seconds is not None else ""
        parts.append("warming up" + ("," + eta if eta else ""))
    elif f.warmup in ("steady", "full"):
        parts.append(f.warmup)
    if f.trouble:
        parts.append(f"{f.state.upper()}: {f.trouble}")
    return "  ".join(parts)


def stall_text(f: Figures) -> str:
    assert f.stall is not None
    causes = "\n".join(f"  - {c}" for c in f.stall.causes)
    return (
        f"{f.target}: {human_size(f.dirty_bytes or 0)} dirty and no progress for {duration(f.stall.seconds)}. "
        f"Likely causes:\n{causes}"
    )


def replay_table(results: list[ReplayResult]) -> Table:
    """Replays side by side, a column each (labelled), the last one this run's; with earlier
    runs, a last column compares this run with the first (before and after a cache)."""
    table = Table(title="Replay" if len(results) == 1 else "Replays compared", title_justify="left")
    table.add_column("")
    for r in results:
        table.add_column(r.label, justify="right", no_wrap=True)
    if len(results) > 1:
        table.add_column("last / first", justify="right", style="bold")
    m = [r.measured for r in results]
    rows: list[tuple[str, list[str], list[float | None]]] = [
        (
            "Requests",
            [f"{x.requests:,}" + ("" if r.complete else f" of {r.planned:,}") for r, x in zip(results, m, strict=True)],
            [],
        ),
        ("Read IOPS", [f"{x.read_iops:,.0f}" for x in m], [x.read_iops for x in m]),
    ]
    if any(x.write_iops for x in m):
        rows.append(("Write IOPS", [f"{x.write_iops:,.0f}" for x in m], [x.write_iops for x in m]))
    for name, values in (
        ("p50", [x.read_p50_us for x in m]),
        ("p90", [x.read_p90_us for x in m]),
        ("p99", [x.read_p99_us for x in m]),
    ):
        rows.append((f"Read latency {name}", [_ms(v) for v in values], values))
    rows.append(("Dropped writes", [f"{r.dropped_writes:,}" for r in results], []))
    for name, cells, values in rows:
        first, last = (values[0], values[-1]) if values else (None, None)
        change = f"×{last / first:,.2f}" if first and last is not None else ""
        table.add_row(name, *cells, *([change] if len(results) > 1 else []))
    return table


def _ms(us: float | None) -> str:
    """A latency in microseconds, in the unit that fits it."""
    return "-" if us is None else latency(us / 1000)
