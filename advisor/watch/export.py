"""Prometheus node_exporter textfile of the caches' samples (``--prometheus FILE``).

node_exporter's textfile collector reads every ``*.prom`` file in its directory; a file it
reads half-written is dropped with an error, so the file is written beside the target and
renamed over it (atomic on one file system).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from advisor.watch.sampler import Sample

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


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(samples: Iterable[Sample]) -> str:
    samples = list(samples)
    lines: list[str] = []
    lines += [
        "# HELP cachewise_cache_info the cache's kind, mode, state and policy (value 1)",
        "# TYPE cachewise_cache_info gauge",
    ]
    for s in samples:
        labels = {"target": s.target, "kind": s.kind, "mode": s.mode or "", "state": s.state, "policy": s.policy or ""}
        lines.append("cachewise_cache_info{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items()) + "} 1")
    for fields, kind, suffix in ((COUNTERS, "counter", "_total"), (GAUGES, "gauge", "")):
        for name, text in fields:
            values = [(s, getattr(s, name)) for s in samples if getattr(s, name) is not None]
            if not values:
                continue
            metric = f"cachewise_cache_{name}{suffix}"
            lines += [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}"]
            lines += [f'{metric}{{target="{_label(s.target)}"}} {v}' for s, v in values]
    return "\n".join(lines) + "\n"


def write_textfile(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file in the same folder, renamed)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
