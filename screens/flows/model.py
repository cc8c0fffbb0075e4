"""A guided flow: what the user chose so far, and the steps of each kind of flow."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from advisor.backends import listed
from advisor.disks.devices import Device, Inventory
from advisor.disks.probe import ProbeResult
from advisor.workload.analysis import Analysis

FlowKind = Literal["add", "remove", "plan"]

FLOWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "add": (
        "Add an SSD cache",
        ("Slow device", "Fast device", "Measure", "Workload", "Recommendation", "Preview and apply", "Warm-up"),
    ),
    "remove": ("Remove a cache", ("Cached device", "Preview, flush and detach")),
    "plan": ("Plan only", ("Slow device", "Fast device", "Workload", "Recommendation", "Save the plan")),
}

START_CHOICES = (
    (
        "add",
        "Add an SSD cache",
        "Put an SSD in front of a hard disk or an LV: pick the two, measure them and the workload, take the "
        "recommendation (or one of its alternatives), preview the exact commands, type the device's name to apply, "
        "and watch the cache warm up. Needs root.",
    ),
    (
        "remove",
        "Remove a cache",
        f"Take a cache away again ({listed()}): see the dirty data, flush it with a countdown, detach, "
        "verify, and give the SSD back. Needs root.",
    ),
    (
        "plan",
        "Plan only (no root needed)",
        "The same questions as Add, ending in a plan file (JSON for `cachewise apply`, or an Ansible playbook) and "
        "the command that applies it. Nothing on this machine is changed.",
    ),
    (
        "disks",
        "Browse the disks",
        "Every disk, partition, LV, md and bcache device with its role and state; probe, trace and recommend from "
        "there (Esc on this screen goes there too).",
    ),
)


@dataclass
class Flow:
    """What the user chose so far in one guided flow."""

    kind: FlowKind
    inventory: Inventory
    probes: dict[str, ProbeResult] = field(default_factory=dict)
    slow: Device | None = None
    fast: list[Device] = field(default_factory=list)
    analysis: Analysis | None = None
    workload: str | None = None

    @property
    def title(self) -> str:
        return FLOWS[self.kind][0]

    @property
    def steps(self) -> tuple[str, ...]:
        return FLOWS[self.kind][1]
