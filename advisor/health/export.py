"""Doctor's findings and numbers as Prometheus gauges, beside the caches' samples in the same
textfile (advisor/watch/export.py writes it). The alert rules and the Grafana dashboard the
package ships (packaging/prometheus/) read exactly these names; tests/unit/test_doctor.py holds
them to it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

from advisor.health.doctor import Report

if TYPE_CHECKING:  # loaded when the gauges are made (advisor/watch/export.py)
    from prometheus_client.metrics_core import GaugeMetricFamily, Metric

# Doctor's metrics, with their help: the packaging's rules and dashboard may name only these and
# the samples' (advisor/watch/export.py).
METRICS = {
    "cachewise_doctor_findings": "findings of the last doctor run, by code and severity",
    "cachewise_doctor_worst": "the worst severity found: 0 none or info, 1 warning, 2 critical (doctor's exit code)",
    "cachewise_doctor_last_run_timestamp_seconds": "when doctor last looked (seconds since the epoch)",
    "cachewise_doctor_unread": "facts doctor could not read (a finding may be missing)",
    "cachewise_cache_failed": "1 when the cache has failed (dm-cache fail mode, a dm-writecache error)",
    "cachewise_cache_read_only": "1 when the cache's metadata went read-only after an error",
    "cachewise_cache_needs_check": "1 when the cache's metadata is marked needs_check",
    "cachewise_cache_degraded": "1 when a device under the cache is missing (a mirror leg)",
    "cachewise_cache_io_errors": "bcache: recent I/O errors of its backing and cache devices (decayed)",
    "cachewise_cache_dirty_stuck_seconds": "how long dirty data has stayed high without going down (0: not stuck)",
    "cachewise_writecache_memory_bytes": "kernel memory a dm-writecache keeps for its blocks",
    "cachewise_memory_bytes": "this machine's memory",
    "cachewise_ssd_percentage_used": "SMART: the share of its rated endurance an SSD under a cache has used",
    "cachewise_ssd_data_written_bytes": "SMART: data written to an SSD under a cache",
    "cachewise_ssd_write_rate_bytes": "bytes written to the SSD per second by its caches (measured or SMART's average)",
    "cachewise_ssd_days_left": "days until the SSD's rated endurance at its write rate",
    "cachewise_boot_ready": "1 when every cache would be activated at the next boot",
    "cachewise_tunables_drifted": "cache tunables whose live value differs from the configured one",
}
SEVERITY_VALUE = {"ok": 0, "info": 0, "warning": 1, "critical": 2}


class DoctorCollector:
    """One doctor report as gauges (a registry's source: advisor.watch.export.registry)."""

    def __init__(self, report: Report, now: float, memory_bytes: int | None = None) -> None:
        self.report, self.now, self.memory_bytes = report, now, memory_bytes

    def _gauge(self, name: str, labels: list[str] | None = None, value: float | None = None) -> GaugeMetricFamily:
        from prometheus_client.metrics_core import GaugeMetricFamily

        return GaugeMetricFamily(name, METRICS[name], labels=labels, value=value)

    def collect(self) -> Iterator[Metric]:
        report = self.report
        found = self._gauge("cachewise_doctor_findings", ["code", "severity"])
        for (code, severity), count in sorted(Counter((f.code, f.severity) for f in report.findings).items()):
            found.add_metric([code, severity], count)
        yield found
        yield self._gauge("cachewise_doctor_worst", value=SEVERITY_VALUE[report.worst])
        yield self._gauge("cachewise_doctor_last_run_timestamp_seconds", value=self.now)
        yield self._gauge("cachewise_doctor_unread", value=len(report.unread))
        if self.memory_bytes:
            yield self._gauge("cachewise_memory_bytes", value=self.memory_bytes)
        flags = ("failed", "read_only", "needs_check", "degraded")
        for flag in flags:
            gauge = self._gauge(f"cachewise_cache_{flag}", ["target"])
            for c in report.caches:
                gauge.add_metric([c.name], 1 if getattr(c, flag) else 0)
            yield gauge
        yield from self._per_cache()
        yield from self._per_ssd()
        if "boot" in report.by_source:
            serious = [f for f in report.by_source["boot"] if f.severity != "info"]
            yield self._gauge("cachewise_boot_ready", value=0 if serious else 1)
        if "tunables" in report.by_source:
            yield self._gauge("cachewise_tunables_drifted", value=len(report.by_source["tunables"]))

    def _per_cache(self) -> Iterator[Metric]:
        caches = self.report.caches
        errors = self._gauge("cachewise_cache_io_errors", ["target"])
        stuck = self._gauge("cachewise_cache_dirty_stuck_seconds", ["target"])
        memory = self._gauge("cachewise_writecache_memory_bytes", ["target"])
        for c in caches:
            if c.io_errors is not None:
                errors.add_metric([c.name], c.io_errors)
            stuck.add_metric([c.name], c.dirty_stuck_seconds or 0)
            if c.writecache_memory_bytes is not None:
                memory.add_metric([c.name], c.writecache_memory_bytes)
        yield from (errors, stuck, memory)

    def _per_ssd(self) -> Iterator[Metric]:
        names = {
            "percentage_used": "cachewise_ssd_percentage_used",
            "data_written_bytes": "cachewise_ssd_data_written_bytes",
            "write_rate_bytes": "cachewise_ssd_write_rate_bytes",
            "days_left": "cachewise_ssd_days_left",
        }
        for field, name in names.items():
            gauge = self._gauge(name, ["device"])
            for s in self.report.ssds:
                value = getattr(s, field)
                if value is not None:
                    gauge.add_metric([s.devnode], value)
            yield gauge
