"""The advice's model: what a recommendation is asked (the devices' facts, the workload measured
or declared, what the user accepts) and what it answers (a verdict, the cache's configuration,
reasons citing findings, the alternatives that can be planned, the range when it cannot judge
yet, and the next steps as actions a front end words). Plain data, no decision in it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from advisor.advice.config import CacheConfig
from advisor.advice.findings import finding
from advisor.advice.workloads import WorkloadType
from advisor.disks.gate import Barrier
from advisor.errors import CachewiseError, Next, codes
from advisor.readers.smart import Endurance

if TYPE_CHECKING:
    from advisor.workload.analysis import Analysis

RECOMMEND_SCHEMA = "cachewise.recommend/1"

Verdict = Literal["cache", "move-to-ssd", "dont-cache", "cant-judge"]
# Why the verdict is what it is, as a code (recommend --json "cause"): the real cause of a "don't
# cache", or why it cannot judge yet.
Cause = Literal[
    "",
    "gate",
    "already-flash",
    "fast-not-fast",
    "fits-on-ssd",
    "very-large-datasets",
    "sequential",
    "write-once",
    "first-touches",
    "ssd-too-small",
    "no-hot-spots",
    "gains-too-little",
    "blocked",
]
DeviceClass = Literal["hdd", "ssd", "nvme", "unknown"]
FileSystem = Literal["ext4", "xfs", "other"]

# Latencies when a device was not probed (T-DEV-1), in ms.
TYPICAL_LATENCY_MS: dict[DeviceClass, float] = {"hdd": 4.16, "ssd": 0.057, "nvme": 0.020, "unknown": 4.16}


# --- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceFacts:
    path: str
    size_bytes: int
    device_class: DeviceClass
    class_source: Literal["probe", "kernel flag", "declared"] = "declared"
    latency_ms: float | None = None  # probe's median 4 KiB random read at queue depth 1
    logical_sector_size: int = 512
    identity: str | None = None
    vg: str | None = None  # the VG it is a PV of, or the LV's VG
    is_lv: bool = False
    has_data: bool = False  # a file system or other signature
    fs_type: str | None = None
    endurance: Endurance | None = None
    redundancy: str | None = None  # what discovery saw that keeps its data on two devices ("md raid1 array md0")
    cached: str | None = None  # the cache it already belongs to ("it is a bcache device ...")
    disks: int = 1  # the whole disks under it (an array's members)
    # What the safety gate (advisor.disks.gate) found against each backend for this device in
    # its part (slow or fast), from what discovery knows of it and of what is stacked on it.
    barriers: tuple[Barrier, ...] = ()

    @property
    def latency(self) -> float:
        return self.latency_ms if self.latency_ms is not None else TYPICAL_LATENCY_MS[self.device_class]


@dataclass(frozen=True)
class Versions:
    kernel: str | None = None
    lvm2: str | None = None
    bcache_tools: str | None = None


@dataclass(frozen=True)
class Inputs:
    slow: DeviceFacts
    fast: tuple[DeviceFacts, ...]
    analysis: Analysis | None = None
    workload: WorkloadType | None = None
    hot_fraction: float | None = None  # declared: this share of the data serves 90% of I/O
    read_share: float | None = None  # declared
    filesystem: FileSystem | None = None  # default: the slow device's file system
    data_bytes: int | None = None  # the dataset; default: the slow device's size
    fast_mirrored: bool = (
        False  # the user says the fast devices are (or will be) mirrored: not seen, so a risk accepted
    )
    accept_writeback_risk: bool = False
    reformat_ok: bool = False  # the slow device's data may be moved off and back (bcache)
    cache_budget_bytes: int | None = None  # at most this much SSD space for the cache
    read_iops: float | None = None  # declared read rate, for warm-up time without a trace
    versions: Versions = field(default_factory=Versions)
    memory_bytes: int | None = None  # the machine's memory (dm-writecache keeps an entry per block in it)


# --- outputs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reason:
    text: str
    findings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Option:
    verdict: Verdict
    config: CacheConfig | None
    summary: str
    tradeoff: str
    findings: tuple[str, ...]


@dataclass(frozen=True)
class CurveView:
    source: str  # "trace" or "model", and for a backend's curve how it was made
    sizes_bytes: list[int]
    hit_ratio: list[float]
    knee_bytes: int
    achievable_hit_ratio: float
    hot_bytes: int  # data serving HOT_SHARE of the I/O
    # How the curve was counted: "exact" (every 4 KiB block of the trace), "shards" (a spatial
    # sample of the blocks, at sample_rate, scaled back) or "model" (no trace: a Zipf curve).
    mode: str = "model"
    sample_rate: float = 1.0
    # What the hit ratios are, for a chart's legend: "hit ratio of a full cache" (every access),
    # or "read hit ratio of a full cache, 64 KiB chunks" for a backend's prediction curve.
    label: str = "hit ratio of a full cache"


@dataclass(frozen=True)
class Uncertain:
    """What a "can't judge yet" could not judge, and the range it can give for the cache it
    would otherwise recommend: the low ends count every first touch of the trace as a miss for
    good, the high ends assume the blocks come back (a full cache's steady hit ratio)."""

    backend: str
    mode: str
    hit_ratio: tuple[float, float] | None  # reads served by the cache (None: a write cache)
    speedup: tuple[float, float]
    size_bytes: tuple[int, int]  # the curve's knee as traced, up to all the room the SSD gives it
    first_touch_share: float
    record: str  # what to record before asking again


@dataclass(frozen=True)
class Recommendation:
    verdict: Verdict
    summary: str
    config: CacheConfig | None
    reasons: tuple[Reason, ...]
    warnings: tuple[Reason, ...]
    runner_ups: tuple[Option, ...]
    curve: CurveView | None
    inputs: dict[str, Any]
    schema: str = RECOMMEND_SCHEMA
    # Each cache backend's predicted hit-ratio curve (by SSD bytes given to the cache), so the
    # choice between them can be seen: bcache follows the 4 KiB curve, lvmcache the chunk curve
    # measured from a trace (at lvm2's chunk for its candidate's size; else the 4 KiB curve over
    # T-SIZE-1's 3.5x space). Of the reads where the trace gave read curves, as predicted_hit_ratio
    # is: the value at a configuration's size_bytes is its prediction.
    backend_curves: dict[str, CurveView] = field(default_factory=dict)
    # What the safety gate found on the devices given: each barrier's code, the backends it bars,
    # whether moving the data lifts it, and its sentence.
    gate: tuple[dict[str, Any], ...] = ()
    cause: Cause = ""
    uncertain: Uncertain | None = None
    # What the user can do next (record a trace, probe a device, record longer), as actions each
    # front end words in its own terms (advisor.errors.ACTIONS).
    next: tuple[Next, ...] = ()

    @property
    def cited(self) -> list[str]:
        """Every finding id cited, in order of first citation."""
        ids: list[str] = []
        for r in (*self.reasons, *self.warnings, *(Reason(o.summary, o.findings) for o in self.runner_ups)):
            ids += [f for f in r.findings if f not in ids]
        return ids

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["next"] = [{"action": n.action, **dict(n.facts)} for n in self.next]
        out["findings"] = {fid: {"text": finding(fid).text, "source": finding(fid).citation} for fid in self.cited}
        return out


codes(
    {
        "no-workload": "there is neither a trace nor a declared workload",
        "bad-hot-fraction": "the hot fraction must be between 0 and 1, not {value}",
        "no-fast": "no fast device was given",
        "slow-is-fast": "the same device is named twice; the slow and fast devices must differ",
        "already-cached": "{path} is already cached: {how}. cachewise does not stack a second cache on the first",
        "fast-already-cached": "{path} is already part of a cache: {how}",
        "no-data-size": "the size of the data on {path} is unknown",
    }
)


class RecommendError(CachewiseError, ValueError):
    """The inputs cannot give a recommendation: ``code`` says which input is missing or wrong,
    so each front end can ask for it in its own terms."""
