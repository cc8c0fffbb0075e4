"""Prometheus node_exporter textfile of the caches' samples (``--prometheus FILE``).

The metrics are collected into a prometheus_client ``CollectorRegistry`` and written in its text
exposition format (``generate_latest``, what ``prometheus_client.write_to_textfile`` writes), so
names, help, types and label escaping are the client library's. The file is not written with
``write_to_textfile`` itself: that opens a temporary file by a predictable name next to the target
and follows links, which root must not do in a folder another user (the node exporter's) can
write. node_exporter's textfile collector reads every ``*.prom`` file in its directory; a file it
reads half-written is dropped with an error, so the file is written beside the target through the
folder's descriptor and renamed over it (advisor/outputs.py). It starts with :data:`MARKER`, and
only a file that does is replaced: a path that names another program's file is refused, not
overwritten. Doctor adds its gauges to the same registry (advisor/health/export.py).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from advisor.outputs import replace_file
from advisor.watch.sampler import Sample

MARKER = "# cachewise textfile: written by cachewise status or watch, replaced whole on each update\n"

COUNTERS = (
    ("hits", "cache hits (reads and writes)"),
    ("misses", "cache misses (reads and writes)"),
    ("read_hits", "read hits"),
    ("read_misses", "read misses"),
    ("write_hits", "write hits"),
    ("write_misses", "write misses"),
    ("bypass_hits", "bcache: hits of I/O that bypassed the cache"),
    ("bypass_misses", "bcache: misses of I/O that bypassed the cache"),
    ("promotions", "dm-cache: blocks promoted into the cache"),
    ("demotions", "dm-cache: blocks demoted from the cache"),
)
GAUGES = (
    ("capacity_bytes", "size of the cache's data area"),
    ("used_bytes", "bytes of the cache holding data"),
    ("dirty_bytes", "bytes not yet written back to the origin"),
    ("writeback_rate_bytes", "bcache: writeback rate per second"),
    ("errors", "error count the target reports"),
)


class SamplesCollector(Collector):
    """The caches' samples as metrics: how many caches were read, each cache's kind, mode, state
    and policy, and its counters and gauges."""

    def __init__(self, samples: Iterable[Sample]) -> None:
        self.samples = list(samples)

    def collect(self) -> Iterator[Metric]:
        samples = self.samples
        # Always a sample, so that a machine without a cache is told from a file no longer written.
        yield GaugeMetricFamily("cachewise_caches", "caches read on this machine (0: none found)", value=len(samples))
        info = GaugeMetricFamily(
            "cachewise_cache_info",
            "the cache's kind, mode, state and policy (value 1)",
            labels=["target", "kind", "mode", "state", "policy"],
        )
        for s in samples:
            info.add_metric([s.target, s.kind, s.mode or "", s.state, s.policy or ""], 1)
        yield info
        for fields, family in ((COUNTERS, CounterMetricFamily), (GAUGES, GaugeMetricFamily)):
            for name, text in fields:
                values = [(s, getattr(s, name)) for s in samples if getattr(s, name) is not None]
                if not values:
                    continue
                metric = family(f"cachewise_cache_{name}", text, labels=["target"])
                for s, v in values:
                    metric.add_metric([s.target], v)
                yield metric


def registry(*collectors: Collector) -> CollectorRegistry:
    """A registry of these collectors alone (not the process's default one)."""
    found = CollectorRegistry(auto_describe=False)
    for collector in collectors:
        found.register(collector)
    return found


def textfile(metrics: CollectorRegistry) -> str:
    """The registry's metrics in the text format, after the marker that says cachewise wrote it."""
    return MARKER + generate_latest(metrics).decode()


def prometheus_text(samples: Iterable[Sample]) -> str:
    return textfile(registry(SamplesCollector(samples)))


def written_by_us(head: bytes) -> bool:
    """Whether a file starts as a textfile cachewise wrote (the only kind it replaces)."""
    return head.startswith(MARKER.encode())


def write_textfile(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, replacing only a textfile cachewise wrote before
    (outputs.Unsafe for anything else at that name: a link, or another program's file)."""
    replace_file(path, text.encode(), written_by_us)


def export_problem(path: Path) -> str | None:
    """Why ``path`` cannot take the textfile (None: it can), looked at before any sample is
    read: a link, anything but a regular file (a FIFO, a device, which are never opened), or a
    file cachewise did not write, is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a link; cachewise replaces only a file it wrote"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        head = os.read(fd, 256) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    return None if written_by_us(head) else f"{path} exists and was not written by cachewise"
