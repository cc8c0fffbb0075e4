"""Running a plan: preflight, journaled execution, resume and roll back.

Every step is written to an append-only journal (JSON lines, fsynced) before and after it
runs, and every command with its exit code to an audit log, both in the state directory. A
step whose postconditions already hold is skipped, so running an interrupted plan again
resumes it; rolling back runs the undo commands of the steps that took effect, newest first.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from advisor.disks.collect import collect
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import build_inventory
from advisor.plan.model import Check, Plan, PlanError, Step
from advisor.runner import TOOL_PACKAGES, CommandError, CommandRunner

NOTHING = "Nothing was changed."
WRITE_PATIENCE = 30.0  # s for bcache's asynchronous sysfs writes to show
FAILURE_PATIENCE = 10.0  # s for a failed step's goal to show anyway (udev got there first)
MODULES = {"lvmcache-attach": ("dm_cache", "dm_cache_smq"), "lvmcache-new": ("dm_cache", "dm_cache_smq"), "lvmcache-uncache": (), "lvmcache-mode": (),
           "bcache-create": ("bcache",),
           "bcache-detach": ()}


class ApplyError(Exception):
    """The plan did not run (or stopped); the message says what state the system is in."""


@dataclass
class LiveState:
    """What the checks look at: LVM's view, and the inventory (discovered on first use, as
    most checks need only pvs and lvs and a full discovery takes seconds)."""

    runner: CommandRunner | None = None
    pvs: dict[str, str] = field(default_factory=dict)  # real device path -> VG ('' when none)
    lvs: dict[str, dict[str, str]] = field(default_factory=dict)  # "vg/lv" -> row
    _inv: Inventory | None = None

    @property
    def inv(self) -> Inventory:
        if self._inv is None:
            self._inv = build_inventory(collect(self.runner or CommandRunner()))
        return self._inv

    @classmethod
    def read(cls, runner: CommandRunner) -> LiveState:
        state = cls(runner)
        if runner.which("lvs") is None:
            return state
        pvs = _report(runner, ["pvs", "-o", "pv_name,vg_name"], "pv")
        state.pvs = {os.path.realpath(r["pv_name"]): r.get("vg_name", "") for r in pvs}
        lvs = _report(runner, ["lvs", "-a", "-o", "vg_name,lv_name,segtype,cache_mode,cache_dirty_blocks"], "lv")
        state.lvs = {f"{r['vg_name']}/{r['lv_name'].strip('[]')}": r for r in lvs}
        return state

    def device(self, path: str) -> Device | None:
        from advisor.disks.discovery import find_device

        return find_device(self.inv, path)


def _report(runner: CommandRunner, argv: list[str], key: str) -> list[dict[str, str]]:
    out = runner.run([*argv, "--reportformat", "json"], timeout=60)
    rows: list[dict[str, str]] = []
    for report in json.loads(out.stdout).get("report", []):
        rows.extend(report.get(key, []))
    return rows


def resolve(path: str, plan: Plan | None, state: LiveState) -> str:
    """Replace ``{ROLE}`` with the sysfs directory of the plan's device with that role."""
    if not path.startswith("{") or plan is None:
        return path
    role, _, rest = path[1:].partition("}")
    bound = next((d for d in plan.devices if d.role == role), None)
    dev = state.device(bound.path) if bound is not None else None
    if dev is None:
        raise ApplyError(f"the plan's {role} device is not present; nothing more was changed")
    return f"/sys/class/block/{dev.name}{rest}"


def read_sysfs(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _matches(text: str | None, value: str) -> bool:
    return text is not None and any(alt in text for alt in value.split("|"))


def holds(check: Check, state: LiveState, plan: Plan | None = None) -> bool:
    a = check.args
    if check.kind in ("sysfs", "sysfs_exists", "no_sysfs"):
        path = resolve(a["path"], plan, state)
        if check.kind == "sysfs":
            return _matches(read_sysfs(path), a["value"])
        return os.path.exists(path) == (check.kind == "sysfs_exists")
    if check.kind == "bcache_sb":
        dev = state.device(a["device"])
        return dev is not None and (dev.fs_type == "bcache" or dev.bcache is not None)
    if check.kind in ("pv", "not_pv", "pv_in_vg", "not_pv_in_vg"):
        real = os.path.realpath(a["device"])
        result = real in state.pvs and (check.kind in ("pv", "not_pv") or state.pvs[real] == a["vg"])
        return result if not check.kind.startswith("not_") else not result
    if check.kind in ("lv", "no_lv"):
        return (a["lv"] in state.lvs) == (check.kind == "lv")
    if check.kind in ("segtype", "not_segtype"):
        row = state.lvs.get(a["lv"])
        same = row is not None and row.get("segtype") == a["segtype"]
        return same if check.kind == "segtype" else (row is not None and not same)
    if check.kind == "cache_mode":
        row = state.lvs.get(a["lv"])
        return row is not None and row.get("cache_mode") == a["mode"]
    if check.kind in ("no_signature", "not_mounted"):
        dev = state.device(a["device"])
        if dev is None:
            return False
        if check.kind == "no_signature":
            return not (dev.fs_type or dev.partition_table or dev.partitions or dev.lvm or dev.bcache or dev.md)
        parts = [state.inv.by_name(p) for p in dev.partitions]
        return not (dev.mountpoints or dev.swap or dev.holders
                    or any(p is not None and (p.mountpoints or p.holders) for p in parts))
    raise PlanError(f"unknown check {check.kind!r}")


def verify_devices(plan: Plan, state: LiveState) -> list[str]:
    """How the plan's devices differ from what is there now (empty: all match)."""
    problems = []
    for bound in plan.devices:
        dev = state.device(bound.path)
        if dev is None:
            problems.append(f"{bound.path} ({bound.role}) is not present any more")
            continue
        if bound.identity and dev.identity != bound.identity:
            problems.append(f"{bound.path} is now a different device (identity {dev.identity}, planned for "
                            f"{bound.identity})")
        if dev.size_bytes != bound.size_bytes:
            problems.append(f"{bound.path} changed size ({dev.size_bytes:,} bytes, planned for {bound.size_bytes:,})")
    return problems


def preflight(plan: Plan, runner: CommandRunner, state: LiveState, *, resuming: bool = False) -> list[str]:
    """Everything that must be true before the first command runs, as sentences."""
    problems: list[str] = []
    if os.geteuid() != 0:
        problems.append("applying a plan changes disks and needs root; run it with sudo")
    for tool in sorted({s.argv[0] for s in plan.steps if s.argv}):
        if runner.which(tool) is None:
            package = TOOL_PACKAGES.get(tool, tool)
            problems.append(f"{tool} is not installed (apt-get install {package})")
    for module in MODULES.get(plan.kind, ()):
        if not Path(f"/sys/module/{module}").exists() and runner.which("modprobe") is not None:
            try:
                result = runner.run(["modprobe", module], timeout=30, check=False)
            except CommandError as exc:
                result = None
                problems.append(f"cannot load kernel module {module}: {exc}")
            if result is not None and result.returncode != 0:
                why = result.stderr.strip() or "modprobe failed"
                problems.append(f"the kernel module {module} cannot be loaded ({why}); this kernel lacks it")
    problems += verify_devices(plan, state)
    if not problems and not resuming:
        first = next((s for s in plan.steps if not s.post or not all(holds(c, state, plan) for c in s.post)), None)
        if first is not None:
            problems += [f"before '{first.description}': expected that {c.describe()}, but it is not so"
                         for c in first.pre if not holds(c, state)]
    return problems


# --- the journal ---

def journal_dir(state_dir: Path) -> Path:
    return state_dir / "journal"


@dataclass
class Journal:
    path: Path

    def write(self, event: str, **fields: Any) -> None:
        record = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event, **fields}
        with self.path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a record cut short by a crash
        return out

    @property
    def plan(self) -> Plan:
        first = self.records()[0]
        return Plan.from_json(first["plan"])

    @property
    def finished(self) -> bool:
        return any(r["event"] in ("done", "rolled-back", "abandoned") for r in self.records())


def unfinished_journals(state_dir: Path) -> list[Journal]:
    d = journal_dir(state_dir)
    if not d.is_dir():
        return []
    journals = [Journal(p) for p in sorted(d.glob("*.jsonl"))]
    return [j for j in journals if j.records() and not j.finished]


def _audit(state_dir: Path, step: Step, returncode: int | str, seconds: float) -> None:
    line = f"{datetime.now(UTC).isoformat(timespec='seconds')}\t{step.id}\t{returncode}\t{seconds:.1f}s\t{step.command}\n"
    with (state_dir / "audit.log").open("a") as fh:
        fh.write(line)


# --- running ---

@dataclass(frozen=True)
class Event:
    kind: str  # "skip", "run", "ok", "fail", "progress", "undo"
    step: Step
    message: str = ""


Reporter = Callable[[Event], None]


def _run_step(step: Step, runner: CommandRunner, state_dir: Path, report: Reporter,
              plan: Plan | None = None) -> tuple[int, str]:
    start = time.monotonic()
    if step.write is not None or step.wait is not None:
        code, message = _sysfs_step(step, runner, report, plan)
        _audit(state_dir, step, code, time.monotonic() - start)
        return code, message
    if step.progress == "cache_dirty":
        lv = step.argv[-1]
        proc = runner.start(list(step.argv), timeout=None)
        last = None
        while proc.running():
            dirty = _dirty_blocks(runner, lv)
            if dirty is not None and dirty != last:
                report(Event("progress", step, f"{dirty:,} dirty blocks to write back"))
                last = dirty
            time.sleep(0.5)
        result = proc.wait(check=False)
    else:
        result = runner.run(list(step.argv), timeout=3600, check=False)
    _audit(state_dir, step, result.returncode, time.monotonic() - start)
    return result.returncode, (result.stderr or result.stdout).strip()


def _sysfs_step(step: Step, runner: CommandRunner, report: Reporter, plan: Plan | None) -> tuple[int, str]:
    state = LiveState(runner)
    if step.write is not None:
        path = resolve(step.write[0], plan, state)
        try:
            with open(path, "w") as fh:
                fh.write(step.write[1])
        except OSError as exc:
            return 1, f"writing {step.write[1]!r} to {path} failed: {exc.strerror or exc}"
        return 0, ""
    assert step.wait is not None
    path = resolve(step.wait[0], plan, state)
    dirty_path = os.path.join(os.path.dirname(path), "dirty_data")
    deadline = time.monotonic() + step.timeout
    last = None
    while time.monotonic() < deadline:
        current = read_sysfs(path)
        if _matches(current, step.wait[1]):
            return 0, ""
        if step.progress == "bcache_dirty":
            dirty = read_sysfs(dirty_path)
            if dirty is not None and (dirty, current) != last:
                report(Event("progress", step, f"{dirty} dirty data to write back (state {current})"))
                last = (dirty, current)
        time.sleep(0.5)
    return 1, f"{path} still reads {read_sysfs(path)!r} after {step.timeout:.0f} s"


def _dirty_blocks(runner: CommandRunner, lv: str) -> int | None:
    """Dirty blocks of a cached LV from the kernel (dmsetup status), not lvs: lvconvert holds
    the VG lock while it flushes, and lvs would wait for it."""
    vg, _, name = lv.partition("/")
    dm_name = f"{vg.replace('-', '--')}-{name.replace('-', '--')}"
    try:
        return cache_dirty_from_status(runner.run(["dmsetup", "status", dm_name], timeout=10, check=False).stdout)
    except CommandError:
        return None


def cache_dirty_from_status(text: str) -> int | None:
    """The dirty-block count in a dm-cache status line (the 11th field after 'cache',
    Documentation/admin-guide/device-mapper/cache.rst)."""
    fields = text.split()
    try:
        return int(fields[fields.index("cache") + 11])
    except (ValueError, IndexError):
        return None


def apply(plan: Plan, runner: CommandRunner, state_dir: Path, report: Reporter, journal: Journal | None = None,
          read_state: Callable[[], LiveState] | None = None) -> Journal:
    """Run the plan's steps in order, skipping those already in effect. Raises ApplyError when a
    step fails or does not take effect, saying where the system stands."""
    read = read_state or (lambda: LiveState.read(runner))
    if journal is None:
        journal_dir(state_dir).mkdir(parents=True, exist_ok=True)
        name = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + f"-{plan.kind}-{os.getpid()}.jsonl"
        journal = Journal(journal_dir(state_dir) / name)
        journal.write("plan", plan=plan.to_json())
    else:
        journal.write("resume")
    done: list[str] = []
    # Steps run in order, so once a step is in effect every step before it has run, even when
    # its own postcondition no longer shows (lvconvert absorbs the metadata LV into the pool).
    state = read()
    last_done = max((i for i, s in enumerate(plan.steps) if s.post and all(holds(c, state, plan) for c in s.post)),
                    default=-1)
    for index, step in enumerate(plan.steps):
        state = read() if index else state
        if index <= last_done or (step.post and all(holds(c, state, plan) for c in step.post)):
            journal.write("step-skip", step=step.id)
            report(Event("skip", step, "already in effect"))
            done.append(step.id)
            continue
        unmet = [c.describe() for c in step.pre if not holds(c, state, plan)]
        if unmet:
            journal.write("step-blocked", step=step.id, unmet=unmet)
            raise ApplyError(_stopped(plan, step, done, f"its precondition does not hold: {'; '.join(unmet)}"))
        journal.write("step-begin", step=step.id, argv=list(step.argv))
        report(Event("run", step, step.command))
        code, output = _run_step(step, runner, state_dir, report, plan)
        journal.write("step-end", step=step.id, returncode=code)
        # The kernel applies bcache's sysfs writes asynchronously, and a failed command may have
        # lost a race to udev doing the same thing (registering a new bcache device): look again.
        patience = WRITE_PATIENCE if code == 0 and step.write is not None else (FAILURE_PATIENCE if code else 0.0)
        missing = [c.describe() for c in step.post if not _eventually(c, read, plan, patience)]
        if code != 0 and (missing or not step.post):
            raise ApplyError(_stopped(plan, step, done, f"`{step.command}` failed with exit code {code}: {output}"))
        if code != 0:  # failed, yet what it was for is in effect (udev registered the device first, say)
            journal.write("step-effective", step=step.id)
        if missing:
            raise ApplyError(_stopped(plan, step, done, f"it ran but did not take effect: {'; '.join(missing)}"))
        done.append(step.id)
        report(Event("ok", step))
    journal.write("done")
    return journal


def _eventually(check: Check, read: Callable[[], LiveState], plan: Plan, patience: float) -> bool:
    """Whether a postcondition holds, looking again for up to ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while True:
        if holds(check, read(), plan):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)


def _stopped(plan: Plan, step: Step, done: list[str], why: str) -> str:
    state = f"steps done: {', '.join(done)}" if done else "no step had taken effect"
    return (f"stopped at '{step.description}': {why}. The plan is half applied ({state}); later steps did not run. "
            "Run `cachewise apply --resume` to retry from here once the cause is fixed, or `cachewise apply "
            "--rollback` to undo the steps that took effect.")


def rollback(journal: Journal, runner: CommandRunner, state_dir: Path, report: Reporter,
             read_state: Callable[[], LiveState] | None = None) -> None:
    """Undo, newest first, every step of the journal's plan that is in effect now."""
    read = read_state or (lambda: LiveState.read(runner))
    plan = journal.plan
    journal.write("rollback")
    for step in reversed(plan.steps):
        state = read()
        if not step.post or not all(holds(c, state, plan) for c in step.post):
            continue
        for argv in step.undo:
            undo = Step(f"undo-{step.id}", f"undo: {step.description}", argv)
            report(Event("undo", undo, undo.command))
            code, output = _run_step(undo, runner, state_dir, report, plan)
            journal.write("undo-end", step=step.id, argv=list(argv), returncode=code)
            if code != 0:
                raise ApplyError(f"rolling back '{step.description}' failed: `{undo.command}` exit {code}: {output}. "
                                 "The steps before it are still in effect; fix the cause and run "
                                 "`cachewise apply --rollback` again.")
    journal.write("rolled-back")


def iter_events(journal: Journal) -> Iterator[dict[str, Any]]:
    yield from journal.records()
