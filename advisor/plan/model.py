"""Plans: ordered steps of commands, built by recipes and never run by them.

A :class:`Plan` is bound to the identities of the devices it touches (serial or WWN, size,
by-id path), so a plan applied later refuses if a device changed. Each :class:`Step` has the
exact argv, a one-line description, checks that must hold before it runs, checks that tell
afterwards whether it took effect (so an interrupted plan can be resumed), and the argv that
undoes it. Checks are typed data (:mod:`advisor.plan.checks`), evaluated against the live
system by :mod:`advisor.apply`. Recipes (recipes/) build plans; the executor runs them.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from advisor import strict
from advisor.errors import what_of
from advisor.inputs import BadJson, parse_json
from advisor.plan import canon, checks, language
from advisor.plan.checks import Check
from advisor.plan.language import PlanError
from advisor.prediction import Prediction

PLAN_SCHEMA = "cachewise.plan/1"
PLAN_SCHEMA_VERSION = 1

__all__ = ["PLAN_SCHEMA", "BoundDevice", "Plan", "PlanError", "Step"]


@dataclass(frozen=True)
class Step:
    """One step. What it does in words, and whether it destroys anything, are computed from its
    command (advisor.plan.language), never stored: a plan file cannot describe a step as other
    than what it runs."""

    id: str
    argv: tuple[str, ...]
    pre: tuple[Check, ...] = ()
    post: tuple[Check, ...] = ()
    undo: tuple[tuple[str, ...], ...] = ()
    seconds: float = 2.0  # expected duration
    progress: str = ""  # "cache_dirty" / "bcache_dirty" / "writecache_dirty": the executor shows what is left to flush
    write: tuple[str, str] | None = None  # (sysfs path, value) instead of a command
    wait: tuple[str, str] | None = None  # (sysfs path, value): wait until it reads so
    timeout: float = 3600.0

    # Written into plan files for people, and ignored when a file is read.
    COMPUTED = frozenset({"description", "destructive"})

    @property
    def description(self) -> str:
        return language.describe(self)

    @property
    def destroys(self) -> tuple[str, ...]:
        """The devices (paths) and LVM names whose contents this step destroys."""
        return language.destroys(self)

    @property
    def destructive(self) -> bool:
        return bool(self.destroys)

    @property
    def command(self) -> str:
        if self.write is not None:
            return language.write_command(self.write)
        if self.wait is not None:
            return f"wait until {self.wait[0]} reads {self.wait[1]}"
        return shlex.join(self.argv)

    @property
    def undo_writes(self) -> tuple[tuple[str, str], ...]:
        """Writes a rollback makes before the undo commands, computed from the step's shape (the
        tunables file a step wrote is removed, the bcache devices make-bcache formatted are
        stopped before they are wiped), never read from a plan file."""
        return language.undo_writes(self)

    @property
    def undo_commands(self) -> tuple[str, ...]:
        """Everything a rollback of this step runs, as the preview shows it."""
        return tuple(map(language.write_command, self.undo_writes)) + tuple(shlex.join(argv) for argv in self.undo)


@dataclass(frozen=True)
class BoundDevice:
    """A device as it was when the plan was made."""

    role: str  # "origin", "ssd", "ssd2" (the second of a mirrored pair), "backing", "cache", "old-ssd"
    path: str  # the stable path the plan's commands use
    devnode: str
    identity: str | None
    serial: str | None
    wwn: str | None
    size_bytes: int
    signature: str | None = None  # what it held when planned (destroyed if destructive)


@dataclass(frozen=True)
class Plan:
    kind: str  # "lvmcache-attach", "lvmcache-uncache", ...
    title: str
    devices: tuple[BoundDevice, ...]
    steps: tuple[Step, ...]
    layout_before: tuple[str, ...] = ()
    layout_after: tuple[str, ...] = ()
    space: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    prediction: Prediction | None = None  # what the recommendation behind it expects of the cache
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    host: str = field(default_factory=socket.gethostname)
    from_snapshot: bool = False  # made from a saved snapshot (of ``host``), not on the machine itself
    schema: str = PLAN_SCHEMA

    COMPUTED = frozenset({"expected_seconds", "destroys"})

    @property
    def destroys(self) -> tuple[str, ...]:
        """What running the plan destroys, computed from its commands: each device a step
        overwrites that held something when the plan was made ("PATH: what it held"; preflight
        refuses when a device holds anything else now), and each VG or LV removed that the plan
        did not create."""
        held = {d.path: d.signature for d in self.devices}
        out: list[str] = []
        created = set(language.created_names(self.steps))
        for step in self.steps:
            for target in step.destroys:
                if target in held:
                    sig = held[target]
                    line = f"{target}: {sig}" if sig else ""
                elif target not in created:
                    line = f"{target} (removed)"
                else:
                    line = ""
                if line and line not in out:
                    out.append(line)
        return tuple(out)

    def destroyed_devices(self) -> tuple[str, ...]:
        """The plan's device paths a step overwrites, whatever they hold."""
        paths = {d.path for d in self.devices}
        return tuple(dict.fromkeys(t for s in self.steps for t in s.destroys if t in paths))

    @property
    def expected_seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def kernel_modules(self) -> tuple[str, ...]:
        """What preflight loads with modprobe: the plan kind's and its commands' (advisor.plan.language)."""
        return language.modules(self.kind, [s.argv for s in self.steps if s.argv])

    @property
    def target(self) -> str:
        """The device the user confirms by typing its path: the one whose data is at stake."""
        return next((d.path for d in self.devices if d.role in ("origin", "backing")), self.devices[0].path)

    def roles(self) -> dict[str, str]:
        """Each device role's stable path."""
        return {d.role: d.path for d in self.devices}

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for step, data in zip(self.steps, out["steps"], strict=True):
            data["pre"] = [c.to_json() for c in step.pre]
            data["post"] = [c.to_json() for c in step.post]
            data["description"] = step.description
            data["destructive"] = step.destructive
        out["destroys"] = list(self.destroys)
        out["expected_seconds"] = self.expected_seconds
        return out

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"

    @classmethod
    def from_json(cls, data: Any) -> Plan:
        if not isinstance(data, dict) or "schema" not in data:
            raise PlanError("this is not a cachewise plan (no schema field)")
        schema = str(data["schema"])
        name, _, version = schema.partition("/")
        if name != "cachewise.plan" or not re.fullmatch(r"[0-9]{1,6}", version):
            raise PlanError(f"this is not a cachewise plan (schema {schema!r})")
        if int(version) > PLAN_SCHEMA_VERSION:
            raise PlanError(
                f"the plan uses schema {schema}, newer than this cachewise understands "
                f"({PLAN_SCHEMA}); upgrade cachewise or make the plan again with this one"
            )
        where = _control_characters(data)
        if where:
            raise PlanError(f"the plan holds control characters ({where}), which no recipe writes")
        try:
            plan = strict.load(cls, data, "the plan", readers={Check: checks.from_json})
        except strict.StrictError as exc:
            raise PlanError(f"the plan file is incomplete or damaged ({what_of(exc)})") from None
        plan.check()
        return plan

    def check(self) -> None:
        """PlanError when the plan says anything its recipe would not: its steps' commands
        (advisor.plan.language) and their checks (advisor.plan.canon)."""
        language.check(self)
        canon.check(self)

    @classmethod
    def loads(cls, text: str) -> Plan:
        try:
            data = parse_json(text)
        except BadJson as exc:
            raise PlanError(f"the plan file is not valid JSON ({exc.why})") from None
        return cls.from_json(data)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _control_characters(data: Any) -> str | None:
    """Where a plan's JSON holds a control character (a terminal escape in its title, a line
    break that fakes a line), in any key or string; None where it holds none."""
    todo: list[tuple[str, Any]] = [("the plan", data)]
    while todo:
        where, value = todo.pop()
        if isinstance(value, str) and _CONTROL.search(value):
            return where
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str) and _CONTROL.search(k):
                    return f"{where}, a key"
                todo.append((f"{where}.{k}", v))
        elif isinstance(value, list | tuple):
            todo += [(f"{where}[{i}]", v) for i, v in enumerate(value)]
    return None
