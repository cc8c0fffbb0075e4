"""The workload classes of the thesis [T], with the mix assumed when nothing was measured.

Kept apart from the recommendation engine (which needs numpy) so the command line can offer
them as choices without loading it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

WorkloadType = Literal[
    "very-small-files", "database", "database-fsync", "mixed-files", "large-files", "very-large-datasets"
]


@dataclass(frozen=True)
class WorkloadClass:
    label: str
    read_share: float
    sequential_share: float
    hot_fraction: float  # of the data, serving 90% of the I/O (L-SIZE-1)
    findings: tuple[str, ...]


WORKLOADS: dict[WorkloadType, WorkloadClass] = {
    "very-small-files": WorkloadClass("very small files (many 4 KiB files created)", 0.2, 0.1, 0.10, ("T-SMALL-1",)),
    "database": WorkloadClass("database (random I/O)", 0.7, 0.05, 0.10, ("T-DB-1",)),
    "database-fsync": WorkloadClass("database with frequent fsync", 0.5, 0.05, 0.10, ("T-DB-2",)),
    "mixed-files": WorkloadClass("mixed file sizes, sequential and random", 0.6, 0.4, 0.15, ("T-MIX-1",)),
    "large-files": WorkloadClass("large files (sequential streams)", 0.7, 0.9, 0.5, ("T-SEQ-1",)),
    "very-large-datasets": WorkloadClass("very large datasets", 0.8, 0.3, 0.2, ("T-SIZE-3", "L-SIZE-2")),
}


def workload_types() -> tuple[str, ...]:
    return get_args(WorkloadType)
