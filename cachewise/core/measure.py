"""Measure: the disks, with short read-only fio probes (classified by latency, recorded in the
history)."""

from __future__ import annotations

from collections.abc import Callable

from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import find_device
from advisor.disks.probe import DEFAULT_SECONDS, ProbeProgress, ProbeResult, check_target
from advisor.errors import CachewiseError, codes, next_step
from cachewise.core.context import Core, Refused
from cachewise.core.discover import scan

codes(
    {
        "same-path-twice": "the same device is named twice; nothing was probed",
        "not-listed": "{path} is a block device that discovery does not list; nothing was probed",
        "same-device-two-paths": "two of the paths name the same device; nothing was probed",
        "no-prober": "this session has no prober (it does not run on a machine's disks); nothing was probed",
    }
)


def probe_targets(core: Core, paths: list[str]) -> tuple[list[Device], Inventory]:
    """The devices to probe for these names, each in any form scan prints (the kernel name, a
    /dev or by-id path, VG/LV ...), as `recommend` and `plan` take them; refused when one names
    no device discovery lists, or two name the same device."""
    if len(set(paths)) != len(paths):
        raise Refused("same-path-twice")
    inv = scan(core)
    targets = []
    for path in paths:
        dev = find_device(inv, path)
        if dev is None:
            if path.startswith("/"):
                check_target(path)  # a path that is missing, no block device, or root's alone: said as such
                raise Refused("not-listed", path=path, next=[next_step("see-devices")])
            raise Refused("no-such-device", path=path, next=[next_step("see-devices")])
        targets.append(dev)
    if len({d.name for d in targets}) != len(targets):
        raise Refused("same-device-two-paths")
    return targets, inv


def probe(
    core: Core,
    dev: Device,
    seconds: float | None = None,
    on_progress: Callable[[ProbeProgress], None] | None = None,
    record: bool = True,
) -> tuple[ProbeResult, CachewiseError | None]:
    """Probe one device (for ``seconds``, default the probe's own budget) and record the
    result: (result, history warning)."""
    if core.prober is None or core.replay:
        # A snapshot's devices are some other machine's: a device here of the same name is not one.
        raise Refused("snapshot-only" if core.replay else "no-prober", next=[next_step("run-on-machine")])
    result = core.prober.probe(dev, seconds or DEFAULT_SECONDS, on_progress or (lambda _p: None))
    return result, core.record(lambda h: h.record_probe(result, dev.serial, dev.wwn)) if record else None
