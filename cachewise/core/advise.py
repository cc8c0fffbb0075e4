"""Advise: the recommendation for a slow device and its fast one(s), assembled once for both
front ends: discovery, the trace's analysis, each device's facts with its newest probe and the
declared facts (:func:`prepare`, whose warnings a front end shows first), then the
recommendation (:func:`recommend`, which the Recommend screen calls again as its inputs change)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.advice import facts
from advisor.advice.model import FileSystem, Inputs, Recommendation, Versions
from advisor.advice.recommend import recommend as recommend_inputs
from advisor.advice.workloads import WorkloadType
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import find_device
from advisor.disks.probe import ProbeResult
from advisor.errors import CachewiseError, codes, next_step
from advisor.workload.analysis import Analysis
from advisor.workload.traces import TraceError
from cachewise.core.context import Core, Refused
from cachewise.core.discover import earlier_probes, scan
from cachewise.core.workload import AnalyzeRequest, analyze

codes(
    {
        "same-device-named-twice": "the same device is named twice ({paths})",
        "trace-unanalysable": "cannot analyse {trace}: {why}",
        "no-probe-history": "there is no probe history ({why}); device classes come from the kernel",
    }
)


@dataclass(frozen=True)
class Declared:
    """What the user says of the workload and the platform, where nothing measures it."""

    workload: WorkloadType | None = None
    hot_fraction: float | None = None  # this share of the data serves 90% of the I/O
    read_share: float | None = None
    filesystem: FileSystem | None = None  # default: the slow device's file system
    data_bytes: int | None = None  # the dataset; default: the slow device's size
    fast_mirrored: bool = False  # the fast devices are (or will be) mirrored: not seen, so a risk accepted
    accept_writeback_risk: bool = False
    reformat_ok: bool = False  # the slow device's data may be moved off and back (bcache)
    cache_budget_bytes: int | None = None  # at most this much SSD space for the cache
    read_iops: float | None = None  # the read rate, for a warm-up time without a trace


@dataclass(frozen=True)
class AdviceRequest:
    """The devices, named by path or kernel name, and what is known of the workload: a trace to
    analyse, an analysis made already, or what is declared."""

    slow: str
    fast: tuple[str, ...]
    trace: Path | None = None
    analysis: Analysis | None = None
    declared: Declared = field(default_factory=Declared)
    kernel: str | None = None  # plan for this kernel instead of the running one
    known_probes: Mapping[str, ProbeResult] | None = None  # probes made in this session, by identity
    inventory: Inventory | None = None  # default: discover now


@dataclass(frozen=True)
class Prepared:
    """The recommendation's inputs, with the inventory they come from and the warnings met."""

    inventory: Inventory
    inputs: Inputs
    warnings: tuple[CachewiseError, ...]


def prepare(core: Core, request: AdviceRequest) -> Prepared:
    """Everything a recommendation needs, without recommending (the Recommend screen recomputes
    it as the user changes the declared facts)."""
    inv = request.inventory or scan(core)
    devices = []
    for path in (request.slow, *request.fast):
        dev = find_device(inv, path)
        if dev is None:
            raise Refused("no-such-device", path=path, next=[next_step("see-devices")])
        devices.append(dev)
    if len({d.name for d in devices}) != len(devices):
        raise Refused("same-device-named-twice", paths=", ".join([request.slow, *request.fast]))
    analysis = request.analysis
    if request.trace is not None:
        # The kernels' replays run at the sizes this recommendation will ask about too (the budget,
        # each SSD's size), so its prediction there is replayed, not read between two sizes.
        budget = request.declared.cache_budget_bytes
        asked = tuple(sorted({*(d.size_bytes for d in devices[1:] if d.size_bytes), *((budget,) if budget else ())}))
        try:
            analysis, _ = analyze(core, AnalyzeRequest(request.trace, replay_sizes=asked))
        except TraceError as exc:
            raise Refused("trace-unanalysable", trace=request.trace, why=exc.what, next=exc.next) from None
    warnings: list[CachewiseError] = []
    probes = dict(request.known_probes or {})
    if not request.known_probes:
        earlier, warning = earlier_probes(core, inv)
        probes.update(earlier)
        if warning is not None:
            warnings.append(Refused("no-probe-history", changed=True, why=warning))

    def probe_of(d: Device) -> dict[str, Any] | None:
        result = probes.get(d.identity or d.name)
        return result.to_json() if result is not None else None

    slow_facts = facts.device_facts(inv, devices[0], probe_of, part="slow")
    fast_facts = tuple(
        facts.device_facts(
            inv, d, probe_of, facts.endurance(core.runner, d.devnode) if core.live else None, part="fast"
        )
        for d in devices[1:]
    )
    versions = facts.versions(core.runner) if core.live else Versions()
    if request.kernel:
        versions = replace(versions, kernel=request.kernel)
    d = request.declared
    inputs = Inputs(
        slow=slow_facts,
        fast=fast_facts,
        analysis=analysis,
        workload=d.workload,
        hot_fraction=d.hot_fraction,
        read_share=d.read_share,
        filesystem=d.filesystem,
        data_bytes=d.data_bytes,
        fast_mirrored=d.fast_mirrored,
        accept_writeback_risk=d.accept_writeback_risk,
        reformat_ok=d.reformat_ok,
        cache_budget_bytes=d.cache_budget_bytes,
        read_iops=d.read_iops,
        versions=versions,
        memory_bytes=inv.memory_bytes,
    )
    return Prepared(inv, inputs, tuple(warnings))


def recommend(inputs: Inputs) -> Recommendation:
    """RecommendError (with a code) when an input is missing; each front end asks for it."""
    return recommend_inputs(inputs)
