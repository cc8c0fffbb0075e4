"""Everything that must be true before a plan's first command runs, as structured problems.

Root, the tools the steps run, the kernel modules the plan needs, the devices it was made
for (same identity and size), and the preconditions of the first step not yet in effect.
Problems carry a code and fields; :meth:`Problem.sentence` and :func:`refusal` make the
words the CLI and the TUI show.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from advisor.apply.state import LiveState
from advisor.plan.model import Plan
from advisor.runner import TOOL_PACKAGES, CommandError, CommandRunner

Code = Literal[
    "not-root", "tool-missing", "module-missing", "device-missing", "device-replaced", "device-resized", "precondition"
]
DEVICE_CHANGED: tuple[Code, ...] = ("device-missing", "device-replaced", "device-resized")


@dataclass(frozen=True)
class Problem:
    code: Code
    subject: str  # the tool, module, device path or step description
    detail: str = ""  # what was found: the package, modprobe's words, the identity or size now, the check
    planned: str = ""  # what the plan expected (identity, size)

    @property
    def device_changed(self) -> bool:
        return self.code in DEVICE_CHANGED

    def sentence(self) -> str:
        if self.code == "not-root":
            return "applying a plan changes disks and needs root; run it with sudo"
        if self.code == "tool-missing":
            return f"{self.subject} is not installed (apt-get install {self.detail})"
        if self.code == "module-missing":
            return f"the kernel module {self.subject} cannot be loaded ({self.detail}); this kernel lacks it"
        if self.code == "device-missing":
            return f"{self.subject} ({self.detail}) is not present any more"
        if self.code == "device-replaced":
            return f"{self.subject} is now a different device (identity {self.detail}, planned for {self.planned})"
        if self.code == "device-resized":
            return f"{self.subject} changed size ({self.detail} bytes, planned for {self.planned})"
        return f"before '{self.subject}': expected that {self.detail}, but it is not so"


def refusal(problems: list[Problem]) -> tuple[str, list[str]]:
    """The refusal's lead (whether the devices changed, or the system does not allow the plan
    now) and one sentence per problem."""
    changed = any(p.device_changed for p in problems)
    lead = "the devices changed since the plan was made" if changed else "the plan cannot run as things stand"
    return lead, [p.sentence() for p in problems]


def verify_devices(plan: Plan, state: LiveState) -> list[Problem]:
    """How the plan's devices differ from what is there now (empty: all match)."""
    problems = []
    for bound in plan.devices:
        dev = state.device(bound.path)
        if dev is None:
            problems.append(Problem("device-missing", bound.path, bound.role))
            continue
        if bound.identity and dev.identity != bound.identity:
            problems.append(Problem("device-replaced", bound.path, str(dev.identity), bound.identity))
        if dev.size_bytes != bound.size_bytes:
            problems.append(Problem("device-resized", bound.path, f"{dev.size_bytes:,}", f"{bound.size_bytes:,}"))
    return problems


def _load_module(module: str, runner: CommandRunner) -> Problem | None:
    if Path(f"/sys/module/{module}").exists() or runner.which("modprobe") is None:
        return None
    try:
        result = runner.run(["modprobe", module], timeout=30, check=False)
    except CommandError as exc:
        return Problem("module-missing", module, exc.what)
    if result.returncode != 0:
        return Problem("module-missing", module, result.stderr.strip() or "modprobe failed")
    return None


def preflight(plan: Plan, runner: CommandRunner, state: LiveState, *, resuming: bool = False) -> list[Problem]:
    """What stands in the way of running ``plan`` now (empty: nothing)."""
    problems: list[Problem] = []
    if os.geteuid() != 0:
        problems.append(Problem("not-root", "root"))
    for tool in sorted({s.argv[0] for s in plan.steps if s.argv}):
        if runner.which(tool) is None:
            problems.append(Problem("tool-missing", tool, TOOL_PACKAGES.get(tool, tool)))
    problems += [p for p in (_load_module(m, runner) for m in plan.kernel_modules) if p is not None]
    problems += verify_devices(plan, state)
    if not problems and not resuming:
        first = next((s for s in plan.steps if not s.post or not all(c.holds(state) for c in s.post)), None)
        if first is not None:
            problems += [
                Problem("precondition", first.description, c.describe()) for c in first.pre if not c.holds(state)
            ]
    return problems
