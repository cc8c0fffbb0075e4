"""Prometheus node_exporter textfile of the caches' samples (``--prometheus FILE``).

node_exporter's textfile collector reads every ``*.prom`` file in its directory; a file it
reads half-written is dropped with an error, so the file is written beside the target and
renamed over it (atomic on one file system). It starts with :data:`MARKER`, and only a file that
does is replaced: a path that names another program's file is refused, not overwritten.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

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


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(samples: Iterable[Sample]) -> str:
    samples = list(samples)
    lines: list[str] = [MARKER.rstrip("\n")]
    # Always a sample, so that a machine without a cache is told from a file no longer written.
    lines += [
        "# HELP cachewise_caches caches read on this machine (0: none found)",
        "# TYPE cachewise_caches gauge",
        f"cachewise_caches {len(samples)}",
    ]
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
