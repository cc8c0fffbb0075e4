"""The facts a recommendation needs from this machine: device facts (with the latest probe
of the disks under a device), tool and kernel versions, and SSD wear from ``smartctl -j``
(parsed by advisor.readers)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

from advisor.advice.model import DeviceFacts, Versions
from advisor.backends import WRITECACHE, by_segtype
from advisor.disks.devices import Device, Inventory, underlying_disks
from advisor.disks.gate import fast_barriers, slow_barriers
from advisor.readers.lvm import parse_version
from advisor.readers.smart import Endurance, parse_smartctl
from advisor.runner import CommandError, CommandRunner

ProbeLookup = Callable[[Device], dict[str, Any] | None]


# md levels and LVM segment types that keep every block on two devices or more.
REDUNDANT_MD_LEVELS = ("raid1", "raid10", "raid4", "raid5", "raid6")
REDUNDANT_LV_SEGTYPES = ("raid1", "raid10", "raid4", "raid5", "raid6", "mirror")


def redundancy(dev: Device) -> str | None:
    """What makes the device redundant, as discovery saw it ("md raid1 array md0"), or None."""
    if dev.md is not None and dev.md.role == "array" and (dev.md.level or "") in REDUNDANT_MD_LEVELS:
        return f"md {dev.md.level} array {dev.md.array or dev.name}"
    if dev.lvm is not None and dev.lvm.role == "lv" and (dev.lvm.segtype or "") in REDUNDANT_LV_SEGTYPES:
        return f"LVM {dev.lvm.segtype} LV {dev.lvm.vg}/{dev.lvm.lv}"
    return None


def existing_cache(dev: Device) -> str | None:
    """The cache the device already is part of, as a phrase ("a bcache device, backing sdd"),
    or None. A second cache stacked on the first is never what the user asked for."""
    b = dev.bcache
    if b is not None:
        if b.role == "bcache":
            return f"it is a bcache device (backing {b.backing_device or '?'}, cache set {b.cache_set_uuid or 'none'})"
        if b.role == "backing":
            return f"it is a bcache backing device (used through {b.bcache_device or 'its bcacheN device'})"
        if b.role == "cache":
            return "it is a bcache cache device"
    cached = by_segtype(dev.lvm.segtype) if dev.lvm is not None and dev.lvm.role == "lv" else None
    if cached is not None:
        return f"it is an LV cached with {cached.target if cached is WRITECACHE else cached.label}"
    return None


def device_facts(
    inv: Inventory,
    dev: Device,
    probe_of: ProbeLookup,
    endurance: Endurance | None = None,
    *,
    part: Literal["slow", "fast"],
) -> DeviceFacts:
    """DeviceFacts for a device in its part (the slow device, or a fast one). Its class comes
    from the newest probe of the disk(s) under it (the slowest, if several), else from the
    kernel's rotational flag; its barriers from the safety gate."""
    disks = underlying_disks(inv, dev) or [dev]
    probes = [p for p in (probe_of(d) for d in disks) if p]
    vg = dev.lvm.vg if dev.lvm is not None else None
    common = dict(
        path=dev.display_path,
        size_bytes=dev.size_bytes,
        logical_sector_size=dev.logical_sector_size or 512,
        identity=dev.identity,
        vg=vg,
        is_lv=dev.lvm is not None and dev.lvm.role == "lv",
        # Disks' has-data too (an LV without a file system signature may hold raw data)
        has_data=dev.signature is not None or dev.state != "free",
        fs_type=dev.fs_type,
        endurance=endurance,
        redundancy=redundancy(dev),
        cached=existing_cache(dev),
        disks=max(len(disks), 1),
        barriers=tuple(slow_barriers(inv, dev) if part == "slow" else fast_barriers(inv, dev)),
    )
    if probes:
        slowest = max(probes, key=lambda p: _p50(p) or 0.0)
        return DeviceFacts(
            device_class=slowest["classification"]["device_class"],
            class_source="probe",
            latency_ms=_p50(slowest),
            **common,  # type: ignore[arg-type]
        )
    rotational = any(d.rotational for d in disks)
    nvme = all(d.transport == "nvme" for d in disks)
    cls = "hdd" if rotational else ("nvme" if nvme else "ssd")
    if any(d.rotational is None for d in disks):
        cls = "unknown"
    return DeviceFacts(device_class=cls, class_source="kernel flag", **common)  # type: ignore[arg-type]


def _p50(probe: dict[str, Any]) -> float | None:
    for phase in probe.get("phases", ()):
        if phase.get("name") == "randread-qd1":
            value = phase.get("lat_p50_ms")
            return float(value) if value is not None else None
    return None


def versions(runner: CommandRunner) -> Versions:
    """Kernel, lvm2 and bcache-tools versions; '' means the tool is not installed, None that
    its version could not be read."""
    lvm: str | None = ""
    if runner.which("lvm"):
        try:
            lvm = parse_version(runner.run(["lvm", "version"], timeout=20, check=False).stdout)
        except CommandError:
            lvm = None
    bcache: str | None = ""
    if runner.which("make-bcache"):
        bcache = None
        if runner.which("dpkg-query"):
            try:
                out = runner.run(["dpkg-query", "-W", "-f", "${Version}", "bcache-tools"], timeout=20, check=False)
                bcache = out.stdout.strip() or None
            except CommandError:
                bcache = None
    return Versions(kernel=os.uname().release, lvm2=lvm, bcache_tools=bcache)


def endurance(runner: CommandRunner, devnode: str) -> Endurance | None:
    if not runner.which("smartctl"):
        return None
    try:
        return parse_smartctl(runner.run(["smartctl", "-j", "-a", devnode], timeout=30, check=False).stdout)
    except CommandError:
        return None
