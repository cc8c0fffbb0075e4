"""The figures the advice takes from the published findings, loaded from data/thesis.toml
beside findings.toml: the thesis's measured speed-ups by workload class, file system, backend
and mode; the SSD space each backend needs for the same hot data; the chance a read miss
promotes its block. Every row names the findings it rests on, checked when the file loads."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, get_args

from advisor.advice.findings import finding
from advisor.advice.workloads import WorkloadType
from advisor.backends import BACKENDS, BackendId, Mode


@dataclass(frozen=True)
class Gain:
    """A speed-up the thesis measured over its uncached array."""

    factor: float
    findings: tuple[str, ...]
    streams: bool = False  # not a measured factor: streams run at the disk's speed, cached or not


@dataclass(frozen=True)
class Promotion:
    """The chance a read miss promotes its block: while the cache has free entries, once full."""

    free: float
    full: float
    findings: tuple[str, ...]


GainKey = tuple[WorkloadType, str, BackendId, Mode]


@dataclass(frozen=True)
class Tables:
    gains: dict[GainKey, Gain]
    space_overhead: dict[BackendId, float]
    promotion: dict[BackendId, Promotion]


def _cited(ids: Any, where: str) -> tuple[str, ...]:
    if not isinstance(ids, list) or not ids:
        raise ValueError(f"thesis.toml: {where} cites no finding")
    for fid in ids:
        finding(fid)  # KeyError names an unknown id
    return tuple(ids)


def parse(text: str) -> Tables:
    """The tables of a thesis.toml text; ValueError or KeyError names what is wrong in it."""
    data = tomllib.loads(text)
    backends = {b.id for b in BACKENDS}
    workloads = set(get_args(WorkloadType))
    gains: dict[GainKey, Gain] = {}
    for i, row in enumerate(data.get("gain", [])):
        where = f"gain {i + 1}"
        key = (row["workload"], row["fs"], row["backend"], row["mode"])
        if key[0] not in workloads or key[1] not in ("ext4", "xfs", "any") or key[2] not in backends:
            raise ValueError(f"thesis.toml: {where} names an unknown workload, file system or backend: {key}")
        if key[3] not in get_args(Mode) or key in gains:
            raise ValueError(f"thesis.toml: {where} has an unknown mode or repeats {key}")
        factor = float(row["factor"])
        if not 0 < factor < 1000:
            raise ValueError(f"thesis.toml: {where} has the factor {factor}")
        gains[key] = Gain(factor, _cited(row.get("findings"), where), bool(row.get("streams", False)))
    space = {b: float(v) for b, v in data["space_overhead"].items()}
    if set(space) != backends or any(v < 1 for v in space.values()):
        raise ValueError("thesis.toml: space_overhead must give every backend a factor of 1 or more")
    promotion = {
        b: Promotion(float(p["free"]), float(p["full"]), _cited(p.get("findings"), f"promotion.{b}"))
        for b, p in data["promotion"].items()
    }
    if not set(promotion) <= backends or any(not (0 < p.full <= p.free <= 1) for p in promotion.values()):
        raise ValueError("thesis.toml: each promotion needs 0 < full <= free <= 1 for a known backend")
    if missing := {b.id for b in BACKENDS if b.caches_reads} - set(promotion):
        raise ValueError(f"thesis.toml: no promotion for {', '.join(sorted(missing))}, which caches reads")
    return Tables(gains, space, promotion)


@cache
def tables() -> Tables:
    return parse(resources.files("advisor.advice").joinpath("data/thesis.toml").read_text("utf-8"))
