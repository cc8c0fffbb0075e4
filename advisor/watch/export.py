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
overwritten (advisor/watch/textfile.py). Doctor adds its gauges to the same registry
(advisor/health/export.py). prometheus_client is imported when metrics are made: every command
imported it at start-up before, 0.5 s of each under the lab's emulated CPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol, cast

from advisor.watch.sampler import Sample
from advisor.watch.textfile import MARKER

if TYPE_CHECKING:  # prometheus_client is loaded when metrics are made, not by every command's start-up
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import Collector

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


class MetricSource(Protocol):
    """What a registry collects from: prometheus_client's ``Collector`` without its base class,
    which would load the client library with this module."""

    def collect(self) -> Iterator[Metric]: ...


class SamplesCollector:
    """The caches' samples as metrics: how many caches were read, each cache's kind, mode, state
    and policy, and its counters and gauges."""

    def __init__(self, samples: Iterable[Sample]) -> None:
        self.samples = list(samples)

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

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


def registry(*sources: MetricSource) -> CollectorRegistry:
    """A registry of these sources alone (not the process's default one). It asks each for its
    metrics through ``collect`` alone (``auto_describe`` off), so a source needs no base class."""
    from prometheus_client import CollectorRegistry

    found = CollectorRegistry(auto_describe=False)
    for source in sources:
        found.register(cast("Collector", source))
    return found


def textfile(metrics: CollectorRegistry) -> str:
    """The registry's metrics in the text format, after the marker that says cachewise wrote it."""
    from prometheus_client import generate_latest

    return MARKER + generate_latest(metrics).decode()


def prometheus_text(samples: Iterable[Sample]) -> str:
    return textfile(registry(SamplesCollector(samples)))
