"""The application core: every use case the command line and the terminal UI offer, once.

Both front ends construct a :class:`Core` with its backends (discovery, prober, executor, the
state directory) and call it; they only parse input and render results. The core sits above
recipes/ and advisor/ (import-linter's layers contract in pyproject.toml) and keeps their
imports inside the use cases, so ``cachewise --version`` or ``scan`` never loads numpy.

Refusals are :class:`Refused`: a sentence that says what happened, that nothing was changed,
and what to do. History writes never fail a use case: :meth:`Core.record` returns the warning.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from advisor.disks.collect import RawSystem, collect, devnum_of, refresh
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import build_inventory, find_device
from advisor.runner import CommandError, CommandRunner
from advisor.units import BCACHE_SEQUENTIAL_CUTOFF as SEQUENTIAL_CUTOFF

if TYPE_CHECKING:
    from advisor.advice.recommend import Inputs, Recommendation
    from advisor.apply.journal import Journal
    from advisor.apply.preflight import Problem
    from advisor.apply.run import Event
    from advisor.disks.probe import ProbeProgress, ProbeResult
    from advisor.history import History
    from advisor.plan.model import Plan
    from advisor.watch.figures import Figures, Prediction, Tracker
    from advisor.watch.sampler import CacheRef, Sample, Sampler
    from advisor.workload.analysis import Analysis
    from advisor.workload.replay import ReplayResult
    from advisor.workload.traces import CsvLayout
    from recipes.lvmcache import CacheSpec

NOTHING = "Nothing was changed."
# Plans that make a cache (recorded with their prediction for `cachewise watch`).
MAKES_CACHE = ("lvmcache-attach", "lvmcache-new", "bcache-create", "writecache-attach")


class Refused(Exception):
    """A use case did not run; the message says what happened, that nothing was changed, and
    what to do. ``problems`` holds preflight's findings when it refused a plan."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


# --- backends: what the core is constructed with, so tests can hand it fakes ---------------


class DiscoveryBackend(Protocol):
    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        """Discover devices. ``quick`` runs no external tools and may reuse earlier answers;
        with ``changed`` it re-reads only those devices. A full scan asks ``should_stop``
        between tool runs and raises ScanInterrupted."""
        ...

    def collect(self) -> RawSystem:
        """The raw facts of a full scan (``scan --save-raw``)."""
        ...


class LiveDiscovery:
    """Discovery on this machine."""

    def __init__(self, runner: CommandRunner) -> None:
        self.runner = runner
        self._last: RawSystem | None = None  # the latest full scan
        self._quick: RawSystem | None = None  # the latest scan of any kind

    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        if quick and changed and self._quick is not None:
            raw = refresh(self._quick, changed)
        else:
            raw = collect(self.runner, tools=not quick, reuse=self._last, should_stop=should_stop)
        if not quick:
            self._last = raw
        self._quick = raw
        return build_inventory(raw)

    def collect(self) -> RawSystem:
        self._last = self._quick = collect(self.runner)
        return self._last


class ReplayDiscovery:
    """Discovery replayed from a raw snapshot (``cachewise scan --save-raw``), for bug reports,
    demos and tests: the screen shows exactly what that machine showed."""

    def __init__(self, raw: RawSystem) -> None:
        self.raw = raw

    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        return build_inventory(self.raw)

    def collect(self) -> RawSystem:
        return self.raw


class Prober(Protocol):
    def probe(self, device: Device, seconds: float, on_progress: Callable[[ProbeProgress], None]) -> ProbeResult:
        """Measure one device read-only (advisor.disks.probe.probe_device)."""
        ...


class LiveProber:
    def __init__(self, runner: CommandRunner) -> None:
        self.runner = runner

    def probe(self, device: Device, seconds: float, on_progress: Callable[[ProbeProgress], None]) -> ProbeResult:
        from advisor.disks.probe import probe_device

        return probe_device(device, self.runner, seconds=seconds, on_progress=on_progress)


class Executor(Protocol):
    """Checks and runs plans (advisor.apply)."""

    def preflight(self, plan: Plan, resuming: bool = False) -> list[Problem]: ...

    def apply(self, plan: Plan, report: Callable[[Event], None], journal: Journal | None = None) -> str: ...

    def rollback(self, journal: Journal, report: Callable[[Event], None]) -> str: ...

    def pending(self) -> list[Journal]: ...


class LiveExecutor:
    def __init__(self, runner: CommandRunner, state_dir: Path) -> None:
        self.runner = runner
        self.state_dir = state_dir

    def preflight(self, plan: Plan, resuming: bool = False) -> list[Problem]:
        from advisor.apply.preflight import preflight
        from advisor.apply.state import LiveState

        return preflight(plan, self.runner, LiveState.read(self.runner, plan), resuming=resuming)

    def apply(self, plan: Plan, report: Callable[[Event], None], journal: Journal | None = None) -> str:
        from advisor.apply.journal import locked
        from advisor.apply.run import apply

        with locked(self.state_dir):
            apply(plan, self.runner, self.state_dir, report, journal=journal)
        return "done"

    def rollback(self, journal: Journal, report: Callable[[Event], None]) -> str:
        from advisor.apply.journal import locked
        from advisor.apply.run import rollback

        with locked(self.state_dir):
            rollback(journal, self.runner, self.state_dir, report)
        return "rolled back"

    def pending(self) -> list[Journal]:
        from advisor.apply.journal import unfinished_journals

        return unfinished_journals(self.state_dir) if self.state_dir.is_dir() else []


def load_snapshot(path: Path) -> RawSystem:
    """A raw snapshot saved with ``scan --save-raw``."""
    try:
        return RawSystem.load(path)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise Refused(f"cannot read the raw snapshot {path}: {exc}. {NOTHING}") from None


# --- the core -------------------------------------------------------------------------------


@dataclass
class Core:
    """The use cases, over the backends. ``live``: the inventory is this machine's, so its tools
    may be asked for versions and SSD wear. ``state_dir`` None records nothing."""

    discovery: DiscoveryBackend
    runner: CommandRunner = field(default_factory=CommandRunner)
    prober: Prober | None = None
    executor: Executor | None = None
    state_dir: Path | None = None
    live: bool = True
    _sampler: Sampler | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.prober is None:
            self.prober = LiveProber(self.runner)

    @classmethod
    def for_machine(cls, state_dir: Path | None = None) -> Core:
        """This machine: live discovery, fio probes, plans applied for real."""
        from advisor.history import default_state_dir

        runner = CommandRunner()
        state = state_dir or default_state_dir()
        return cls(LiveDiscovery(runner), runner, LiveProber(runner), LiveExecutor(runner, state), state, live=True)

    @classmethod
    def for_snapshot(cls, raw: RawSystem, state_dir: Path | None = None) -> Core:
        """A saved snapshot: nothing is probed, applied or recorded; ``state_dir`` only supplies
        earlier probes."""
        return cls(ReplayDiscovery(raw), CommandRunner(), None, None, state_dir, live=False)

    # -- discovery and history --

    def scan(
        self, quick: bool = False, should_stop: Callable[[], bool] | None = None, changed: set[str] | None = None
    ) -> Inventory:
        return self.discovery.scan(quick=quick, should_stop=should_stop, changed=changed)

    def record(self, write: Callable[[History], object]) -> str | None:
        """Write to the history database. A failure never fails the use case: the warning is
        returned for the front end to show (None: recorded, or nothing to record into)."""
        import sqlite3

        from advisor.history import History, HistoryError

        if self.state_dir is None:
            return None
        try:
            with History.open_default(self.state_dir) as hist:
                write(hist)
        except HistoryError as exc:
            return str(exc)
        except (sqlite3.Error, OSError) as exc:  # read-only, full, locked by another program
            return (
                f"the history database in {self.state_dir} could not be written ({exc}); nothing was recorded. "
                "Choose a writable place with --state-dir."
            )
        return None

    @property
    def replay(self) -> bool:
        """The inventory is a saved snapshot of some machine: nothing is recorded or applied."""
        return isinstance(self.discovery, ReplayDiscovery)

    def record_inventory(self, inv: Inventory) -> str | None:
        return None if self.replay else self.record(lambda h: h.record_inventory(inv))

    def earlier_probes(self, inv: Inventory) -> tuple[dict[str, ProbeResult], str | None]:
        """The newest complete probe of each device with an identity, by identity; and a warning
        when the history could not be read."""
        from advisor.disks.probe import ProbeResult

        found: dict[str, ProbeResult] = {}

        def read(hist: History) -> None:
            for dev in inv.devices:
                if dev.identity and dev.identity not in found:
                    data = hist.latest_probe(dev.identity, dev.size_bytes)
                    if data is not None:
                        found[dev.identity] = ProbeResult.from_json(data)

        return found, self.record(read)

    # -- probe --

    def probe_targets(self, paths: list[str]) -> tuple[list[Device], Inventory]:
        """The devices to probe for these paths, refused with a sentence when one is not a disk
        discovery lists, or two name the same device."""
        from advisor.disks.probe import ProbeError, check_target

        if len(set(paths)) != len(paths):
            raise Refused("the same device is named twice; nothing was probed.")
        try:
            for path in paths:
                check_target(path)
        except ProbeError as exc:
            raise Refused(str(exc)) from None
        inv = self.scan()
        by_devnum = {d.devnum: d for d in inv.devices}
        targets = []
        for path in paths:
            dev = by_devnum.get(devnum_of(path) or "")
            if dev is None:
                raise Refused(f"{path} is a block device that discovery does not list; nothing was probed.")
            targets.append(dev)
        if len({d.name for d in targets}) != len(targets):
            raise Refused("two of the paths name the same device; nothing was probed.")
        return targets, inv

    def probe(
        self,
        dev: Device,
        seconds: float | None = None,
        on_progress: Callable[[ProbeProgress], None] | None = None,
        record: bool = True,
    ) -> tuple[ProbeResult, str | None]:
        """Probe one device (for ``seconds``, default the probe's own budget) and record the
        result: (result, history warning)."""
        from advisor.disks.probe import DEFAULT_SECONDS

        assert self.prober is not None
        result = self.prober.probe(dev, seconds or DEFAULT_SECONDS, on_progress or (lambda _p: None))
        return result, self.record(lambda h: h.record_probe(result, dev.serial, dev.wwn)) if record else None

    # -- workload --

    def analyze(
        self,
        path: Path,
        block_size: int = 4096,
        mode: str = "auto",
        fmt: str = "auto",
        layout: CsvLayout | None = None,
        sequential_cutoff: int = SEQUENTIAL_CUTOFF,
    ) -> tuple[Analysis, dict[str, Any]]:
        """Analyse a trace file: (analysis, the trace's own metadata). TraceError when the file
        cannot be read as a trace; Refused for a bad block size."""
        from advisor.workload.analysis import analyze_path
        from advisor.workload.traces import MSR

        try:
            return analyze_path(path, block_size, mode, fmt, layout or MSR, sequential_cutoff)  # type: ignore[arg-type]
        except ValueError as exc:
            raise Refused(f"{exc}; nothing was analysed.") from None

    def record_analysis(self, analysis: Analysis, path: Path, meta: dict[str, Any]) -> str | None:
        from advisor.workload.traces import file_sha256

        return self.record(lambda h: h.record_analysis(analysis, file_sha256(path), meta))

    def trace(
        self,
        device: str,
        output: Path,
        seconds: float,
        tracer: str = "auto",
        on_progress: Callable[[Any], None] | None = None,
        on_blktrace: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Record ``device``'s block I/O to ``output`` for ``seconds`` through tracefs (or
        blktrace): the summary (schema cachewise.trace/1). Refused before anything is traced,
        or when the capture fails (an empty output is removed)."""
        from advisor.workload.capture import (
            Capture,
            CaptureError,
            capture_with_blktrace,
            plan_capture,
            tracefs,
        )

        if not is_root():
            raise Refused("tracing block I/O needs root (tracefs); nothing was traced. Run `sudo cachewise trace ...`.")
        check_output(output, "nothing was traced")
        try:
            plan = plan_capture(self.scan(), device)
            if tracer == "auto":
                try:
                    tracefs(self.runner)
                    tracer = "tracefs"
                except CaptureError:
                    if self.runner.which("blktrace") is None:
                        raise
                    tracer = "blktrace"
            if tracer == "tracefs":
                with Capture(plan, self.runner) as cap, output.open("xb") as out:
                    result = cap.run(out, seconds, on_progress)
            else:
                if on_blktrace is not None:
                    on_blktrace(plan.devnode)
                with output.open("xb") as out:
                    result = capture_with_blktrace(plan, self.runner, out, seconds)
        except CaptureError as exc:
            _remove_if_empty(output)
            raise Refused(str(exc)) from None
        except BaseException:  # interrupted before the capture began: no empty file left behind
            _remove_if_empty(output)
            raise
        return {
            "schema": "cachewise.trace/1",
            "path": str(output),
            "device": plan.devnode,
            "event": plan.event if tracer == "tracefs" else "blktrace",
            "events": result.events,
            "seconds": result.seconds,
            "lost": result.lost,
            "bad_lines": result.bad_lines,
            "stopped_by": result.stopped_by,
        }

    # -- recommend --

    def recommend_inputs(
        self,
        inv: Inventory,
        slow: str,
        fast: list[str],
        *,
        analysis: Analysis | None = None,
        kernel: str | None = None,
        known_probes: Mapping[str, ProbeResult] | None = None,
        **declared: Any,
    ) -> tuple[Inputs, list[str]]:
        """The recommendation's inputs for a slow device and its fast one(s), named by path or
        kernel name: each device's facts with its newest probe (``known_probes`` first, then the
        history), SSD wear and tool versions when the inventory is this machine's, and the
        declared fields of :class:`~advisor.advice.recommend.Inputs`. Also the warnings met."""
        from advisor.advice import facts
        from advisor.advice.recommend import Inputs, Versions

        devices = []
        for path in [slow, *fast]:
            dev = find_device(inv, path)
            if dev is None:
                raise Refused(f"{path} is not a block device on this machine (see `cachewise scan`). {NOTHING}")
            devices.append(dev)
        if len({d.name for d in devices}) != len(devices):
            raise Refused(f"the same device is named twice ({', '.join([slow, *fast])}). {NOTHING}")
        warnings: list[str] = []
        probes = dict(known_probes or {})
        if not known_probes:
            earlier, warning = self.earlier_probes(inv)
            probes.update(earlier)
            if warning:
                warnings.append(f"no probe history ({warning}); device classes come from the kernel.")

        def probe_of(d: Device) -> dict[str, Any] | None:
            result = probes.get(d.identity or d.name)
            return result.to_json() if result is not None else None

        slow_facts = facts.device_facts(inv, devices[0], probe_of)
        fast_facts = tuple(
            facts.device_facts(inv, d, probe_of, facts.endurance(self.runner, d.devnode) if self.live else None)
            for d in devices[1:]
        )
        versions = facts.versions(self.runner) if self.live else Versions()
        if kernel:
            versions = replace(versions, kernel=kernel)
        return Inputs(slow=slow_facts, fast=fast_facts, analysis=analysis, versions=versions, **declared), warnings

    def recommend(self, inputs: Inputs) -> Recommendation:
        """RecommendError (with a code) when an input is missing; each front end asks for it."""
        from advisor.advice.recommend import recommend

        return recommend(inputs)

    # -- plan --

    def plan(self, inv: Inventory, recipe: str, **options: Any) -> Plan:
        """A plan from a recipe and its options (see the CLI's `plan` subcommands)."""
        from recipes import bcache, lvmcache, writecache
        from recipes.common import RecipeError

        builders: dict[str, Callable[..., Plan]] = {
            "lvmcache-attach": lvmcache.lvmcache_attach,
            "lvmcache-uncache": lvmcache.lvmcache_uncache,
            "lvmcache-new": lvmcache.lvmcache_new,
            "lvmcache-mode": lvmcache.lvmcache_mode,
            "bcache-create": bcache.bcache_create,
            "bcache-detach": bcache.bcache_detach,
            "writecache-attach": writecache.writecache_attach,
            "writecache-detach": writecache.writecache_detach,
            "remove": self.removal_plan,
        }
        if recipe not in builders:
            raise Refused(f"there is no recipe {recipe!r} (choose one of {', '.join(builders)}). {NOTHING}")
        if recipe == "writecache-attach":
            inv = self._with_fs_block_size(inv, str(options.get("lv_name", "")))
        try:
            return builders[recipe](inv, **options)
        except RecipeError as exc:
            raise Refused(str(exc)) from None

    def removal_plan(self, inv: Inventory, path: str, release: list[str] | None = None, free_ssd: bool = False) -> Plan:
        """The plan that removes the cache ``path`` is part of (the cached LV or bcache device, or
        its backing device), whatever its kind; a RecipeError saying why for a device that is no
        cache cachewise can remove. ``free_ssd``: also give the SSD back, blank (an LVM cache's
        PVs that hold nothing else are released; a bcache cache device is wiped)."""
        from recipes.common import RecipeError
        from recipes.lvmcache import cache_pvs

        dev = find_device(inv, path)
        if dev is None:
            raise RecipeError(f"{path} is not a block device on this machine (see `cachewise scan`). {NOTHING}")
        caching = dev.caching
        if caching is None:
            raise RecipeError(f"{dev.display_path} is part of no cache. {NOTHING}")
        if caching.remove is None:
            state = f"; {caching.state}" if caching.state else ""
            raise RecipeError(
                f"{dev.display_path} is a {caching.part} ({caching.kind}{state}), not a cache cachewise "
                f"can remove: {caching.can}. {NOTHING}"
            )
        lvm = dev.lvm
        if caching.remove == "bcache-detach":
            if release:
                raise RecipeError(
                    f"a bcache cache device is released with --wipe-cache of bcache-detach, not "
                    f"--release-ssd. {NOTHING}"
                )
            return self.plan(inv, "bcache-detach", path=dev.devnode, wipe_cache=free_ssd)
        assert lvm is not None
        if free_ssd and not release:
            release = [d.display_path for d in cache_pvs(inv, f"{lvm.vg}/{lvm.lv}")] or None
        return self.plan(inv, caching.remove, lv_name=f"{lvm.vg}/{lvm.lv}", release=release or None)

    def _with_fs_block_size(self, inv: Inventory, lv_name: str) -> Inventory:
        """The inventory with the file system block size of ``lv_name`` read by blkid where
        discovery has none (udev does not export it)."""
        from advisor.readers.blkid import parse_export
        from recipes.common import RecipeError
        from recipes.lvmcache import find_lv

        try:
            dev = find_lv(inv, lv_name)
        except RecipeError:
            return inv  # the recipe says why
        if not dev.fs_type or dev.fs_block_size or not self.live or not self.runner.which("blkid"):
            return inv
        try:
            out = self.runner.run(["blkid", "-p", "-o", "export", dev.devnode], timeout=15, check=False)
            size = int(parse_export(out.stdout).get("BLOCK_SIZE", "0") or 0)
        except (CommandError, ValueError):
            return inv
        if not size:
            return inv
        fixed = replace(dev, fs_block_size=size)
        return replace(inv, devices=tuple(fixed if d.name == dev.name else d for d in inv.devices))

    def plan_recommended(self, inv: Inventory, rec: Recommendation, slow: str, fast: list[str]) -> Plan:
        """The plan for a recommendation's cache, on the devices it was made for."""
        cfg = rec.config
        if cfg is None:
            raise Refused(f"the recommendation is not to cache, so there is nothing to set up. {NOTHING}")
        prediction = prediction_from_config(asdict(cfg))
        ssds = fast[:2] if cfg.mirrored_pool else fast[:1]
        if cfg.backend == "lvmcache":
            plan = self.plan(inv, "lvmcache-attach", lv_name=slow, ssd_path=ssds, spec=spec_from_config(asdict(cfg)))
            return replace(plan, prediction=prediction)
        if cfg.backend == "lvmcache-writecache":
            from recipes.writecache import WritecacheSpec

            spec = WritecacheSpec(cfg.size_bytes, block_size=cfg.writecache_block_size)
            plan = self.plan(inv, "writecache-attach", lv_name=slow, ssd_path=ssds, spec=spec)
            return replace(plan, prediction=prediction)
        if cfg.backend == "bcache":
            plan = self.plan(
                inv,
                "bcache-create",
                backing_path=slow,
                cache_path=fast[0],
                mode=cfg.mode,
                sequential_cutoff=cfg.sequential_cutoff_bytes or SEQUENTIAL_CUTOFF,
                writeback_percent=cfg.writeback_percent or 0,
            )
            return replace(plan, prediction=prediction)
        raise Refused(f"cachewise has no recipe for {cfg.label}. {NOTHING}")

    def save_plan(self, plan: Plan, path: Path, fmt: str = "json") -> str:
        """Write the plan to a new file, as JSON (for `cachewise apply`) or as an Ansible
        playbook; the sentence that says how to run it. Refused, with nothing written, when the
        file cannot be a new one or the plan has no playbook form."""
        check_output(path, "no plan was saved")
        if fmt == "ansible":
            from recipes.ansible import AnsibleError, render

            try:
                text = render(plan)
            except AnsibleError as exc:
                raise Refused(f"{exc}. {NOTHING}") from None
            how = f"Run it with: ansible-playbook -i HOSTS {path}"
        else:
            text, how = plan.dumps(), f"Run it with: sudo cachewise apply {path}"
        try:
            with path.open("x") as out:
                out.write(text)
        except OSError as exc:
            raise Refused(f"cannot write {path}: {exc.strerror}; no plan was saved. Choose another place.") from None
        return how

    # -- apply --

    def load_plan(self, path: Path) -> Plan:
        from advisor.plan.model import Plan, PlanError

        try:
            return Plan.loads(path.read_text())
        except OSError as exc:
            raise Refused(f"cannot read the plan {path}: {exc.strerror}. {NOTHING}") from None
        except PlanError as exc:
            raise Refused(f"{path}: {exc}. {NOTHING}") from None

    def pending(self) -> list[Journal]:
        """Journals of plans that were interrupted, oldest first, and journals that cannot be
        read (``Journal.problem()`` says why; only :meth:`abandon` clears them)."""
        return self.executor.pending() if self.executor is not None else []

    def abandon(self, path: Path) -> Journal:
        """Record the decision not to resume or roll back the journal at ``path`` (its steps that
        ran stay as they are)."""
        from advisor.apply.journal import Busy, Journal, JournalError, abandon, journal_dir, locked

        if self.state_dir is None:
            raise Refused(f"there is no state directory to find journals in. {NOTHING}")
        journal = Journal(path)
        if journal.path.parent.resolve() != journal_dir(self.state_dir).resolve() or not path.name.endswith(".jsonl"):
            raise Refused(f"{path} is not a journal in {journal_dir(self.state_dir)}. {NOTHING}")
        try:
            with locked(self.state_dir):
                abandon(journal)
        except (Busy, JournalError) as exc:
            raise Refused(f"{exc}. {NOTHING}") from None
        return journal

    def preflight(self, plan: Plan, resuming: bool = False) -> None:
        """Refused, with every problem, when the plan cannot run as things stand."""
        from advisor.apply.preflight import refusal
        from advisor.readers.lvm import ReportError
        from advisor.runner import CommandError

        if self.executor is None:
            where = (
                "this shows a saved snapshot of a machine, not this one"
                if self.replay
                else "this session has no state directory for the apply journal"
            )
            raise Refused(
                f"{where}: plans are applied on the machine itself with `sudo cachewise apply PLAN`. {NOTHING}"
            )
        try:
            problems = self.executor.preflight(plan, resuming)
        except (CommandError, ReportError) as exc:
            raise Refused(f"cannot read the system's state: {exc}. {NOTHING}") from None
        if problems:
            raise Refused(refusal(problems), problems)

    def apply_checked(
        self,
        plan: Plan,
        confirm: Callable[[Plan], bool],
        report: Callable[[Event], None],
        journal: Journal | None = None,
        rollback: bool = False,
    ) -> str:
        """Preflight, then the user's confirmation, then the journaled run (or the roll back of
        ``journal``). Returns the outcome; Refused before anything ran, ApplyError (saying where
        the system stands) when a step failed."""
        from advisor.apply.journal import Busy

        self.preflight(plan, resuming=journal is not None)
        if not confirm(plan):
            raise Refused(f"the name did not match; {NOTHING}")
        assert self.executor is not None
        try:
            if rollback:
                assert journal is not None
                return self.executor.rollback(journal, report)
            outcome = self.executor.apply(plan, report, journal)
        except Busy as exc:
            raise Refused(f"{exc}. {NOTHING}") from None
        self.record_made(plan)
        return outcome

    def record_made(self, plan: Plan) -> str | None:
        """Remember a cache this plan made, with its prediction, for `cachewise watch`."""
        import time

        if plan.kind not in MAKES_CACHE:
            return None
        return self.record(lambda h: h.record_cache(plan.target, plan.kind, plan.prediction, time.time()))

    # -- watch --

    def sampler(self) -> Sampler:
        from advisor.watch.sampler import Sampler

        if self._sampler is None:
            self._sampler = Sampler(self.runner)
        return self._sampler

    def caches(self) -> list[CacheRef]:
        """Every cache on this machine (dm-cache, dm-writecache, bcache)."""
        if self.replay:
            raise Refused(f"a saved snapshot has no live caches to read; run this on the machine itself. {NOTHING}")
        return self.sampler().caches()

    def watch_target(self, target: str) -> CacheRef:
        from advisor.watch.sampler import WatchError

        if self.replay:
            raise Refused(f"a saved snapshot has no live caches to read; run this on the machine itself. {NOTHING}")
        try:
            return self.sampler().find(target)
        except WatchError as exc:
            raise Refused(str(exc)) from None

    def prediction(self, ref: CacheRef) -> Prediction | None:
        """What the recommendation behind this cache predicted, when cachewise made it from one:
        the newest cache recorded on the same device."""
        found: list[Prediction] = []

        def read(hist: History) -> None:
            for target, made_at, prediction in hist.made_caches():
                real = os.path.basename(os.path.realpath(target)) if target.startswith("/") else target
                if prediction is not None and real in (ref.device, ref.origin, ref.name):
                    found.append(replace(prediction, applied_at=prediction.applied_at or made_at))
                    return

        self.record(read)
        return found[0] if found else None

    def status(self) -> list[tuple[CacheRef, Sample | None]]:
        """Every cache with one sample of it (None when it could not be read)."""
        refs = self.caches()
        by_name = {s.target: s for s in self.sampler().sample(refs)}
        return [(ref, by_name.get(ref.name)) for ref in refs]

    def watch(self, refs: list[CacheRef], record: bool = True, stall_seconds: float | None = None) -> Watch:
        """A watch of these caches: call ``step()`` once per interval. A flush with no progress
        for ``stall_seconds`` (default advisor.watch.figures.STALL_SECONDS) is a stall."""
        return Watch(
            self,
            refs,
            {ref.name: self.prediction(ref) for ref in refs},
            record and self.state_dir is not None,
            stall_seconds,
        )

    def recorded_samples(self, ref: CacheRef, since: float) -> list[Sample]:
        """Samples of this cache recorded since ``since`` (a restarted Warm-up screen's past)."""
        found: list[Sample] = []
        self.record(lambda h: found.extend(h.samples(ref.name, since)))
        return found

    def bcache_device(self, plan: Plan) -> str | None:
        """The stable path of the bcache device a bcache-create plan made."""
        backing_path = next((d.path for d in plan.devices if d.role == "backing"), None)
        inv = self.scan()
        backing = find_device(inv, backing_path) if backing_path else None
        if backing is None:
            return None
        bcache = next((d for d in inv.devices if d.kind == "bcache" and backing.name in d.slaves), None)
        return (bcache.stable_path or bcache.devnode) if bcache is not None else None

    # -- replay --

    def replay_trace(
        self,
        trace: Path,
        target: str,
        *,
        speed: float = 1.0,
        duration: float | None = None,
        fmt: str = "auto",
        layout: CsvLayout | None = None,
        label: str | None = None,
        allow_writes: bool = False,
        disposable: str | None = None,
        allow_file: bool = False,
        on_progress: Callable[[float, float | None], None] | None = None,
    ) -> ReplayResult:
        """Replay a trace onto ``target`` with fio and return what it measured: read-only unless
        writes are allowed and the target is named disposable and holds nothing. Refused before
        anything runs (or when fio fails); TraceError when the trace cannot be read. (Not named
        ``replay``: that property says the inventory is a saved snapshot.)"""
        import time

        from advisor.workload.replay import (
            ReplayError,
            check_disposable,
            check_speed,
            check_target,
            replay,
        )

        try:
            check_speed(speed)
            found = check_target(target, allow_file)
            if found.block and not is_root():
                raise Refused(
                    f"replaying onto {target} needs root (fio reads the device directly); nothing was "
                    "replayed. Run `sudo cachewise replay ...`."
                )
            device = None
            if allow_writes:
                check_disposable(found, disposable)  # before the scan, which takes a while
                device = find_device(self.scan(), target) if found.block else None
            label = label or f"{os.path.basename(found.real)} {time.strftime('%H:%M')}"
            return replay(
                trace,
                target,
                self.runner,
                label=label,
                fmt=fmt,  # type: ignore[arg-type]
                layout=layout,
                speed=speed,
                duration=duration,
                allow_writes=allow_writes,
                disposable=disposable,
                device=device,
                allow_file=allow_file,
                on_progress=on_progress,
            )
        except ReplayError as exc:
            raise Refused(str(exc)) from None

    def load_replay_result(self, path: Path) -> ReplayResult:
        """An earlier ``replay --json`` output, to compare with."""
        import json

        from advisor.workload.replay import ReplayResult

        try:
            return ReplayResult.from_json(json.loads(path.read_text()))
        except OSError as exc:
            raise Refused(f"cannot read the replay result {path}: {exc.strerror}; nothing was replayed.") from None
        except ValueError as exc:
            raise Refused(f"{path} is not a `cachewise replay --json` result ({exc}); nothing was replayed.") from None


class Watch:
    """Caches being watched: each ``step()`` samples them all once, derives their figures, and
    records the samples in the history in batches (thinning old ones once an hour)."""

    BATCH_SECONDS = 10.0
    THIN_SECONDS = 3600.0

    def __init__(
        self,
        core: Core,
        refs: list[CacheRef],
        predictions: Mapping[str, Prediction | None],
        record: bool,
        stall_seconds: float | None = None,
    ) -> None:
        from advisor.watch.figures import STALL_SECONDS, Tracker

        self.core, self.refs, self.record = core, refs, record
        self.trackers: dict[str, Tracker] = {
            r.name: Tracker(predictions.get(r.name), stall_seconds=stall_seconds or STALL_SECONDS) for r in refs
        }
        self.pending: list[Sample] = []
        self.last_write = self.last_thin = -self.THIN_SECONDS  # the first batch thins
        self.warning: str | None = None

    def step(self) -> list[tuple[Sample, Figures]]:
        import time

        samples = self.core.sampler().sample(self.refs)
        out = [(s, self.trackers[s.target].add(s)) for s in samples]
        if self.record:
            self.pending.extend(samples)
            now = time.monotonic()
            if now - self.last_write >= self.BATCH_SECONDS:
                self.last_write = now
                thin = now - self.last_thin >= self.THIN_SECONDS
                if thin:
                    self.last_thin = now
                self.flush(thin=thin)
        return out

    def flush(self, thin: bool = False) -> str | None:
        """Record the samples not yet recorded; the warning when the history cannot be written."""
        import time

        pending, self.pending = self.pending, []
        if not pending and not thin:
            return None

        def write(h: History) -> None:
            h.record_samples(pending)
            if thin:
                h.thin_samples(time.time())

        warning = self.core.record(write)
        self.warning = self.warning or warning
        return warning


def _remove_if_empty(path: Path) -> None:
    if path.is_file() and not path.is_symlink() and path.stat().st_size == 0:
        path.unlink()


def spec_from_config(
    cfg: Mapping[str, Any],
    size: int | None = None,
    chunk: int | None = None,
    metadata: int | None = None,
    mode: str | None = None,
) -> CacheSpec:
    """An lvmcache spec from a recommendation's config (``recommend --json``'s "config", or the
    TUI's recommendation); explicit values win."""
    from recipes.lvmcache import CacheSpec

    if cfg.get("backend") != "lvmcache":
        raise Refused(f"the recommendation is not an lvmcache ({cfg.get('backend') or 'no cache'}). {NOTHING}")
    try:
        return CacheSpec(
            size_bytes=size or int(cfg["size_bytes"]),
            mode=mode or str(cfg["mode"]),
            chunk_bytes=chunk or cfg.get("chunk_size_bytes"),
            metadata_bytes=metadata or cfg.get("metadata_size_bytes"),
            policy=cfg.get("policy") or "smq",
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise Refused(f"the recommendation's configuration is incomplete ({exc}). {NOTHING}") from None


def prediction_from_config(cfg: Mapping[str, Any]) -> Prediction | None:
    """What a recommendation's config (``recommend --json``'s "config") predicts of the cache:
    the hit ratio at its size and the warm-up model's hot data and times."""
    from advisor.watch.figures import Prediction

    def number(value: Any) -> float | None:
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    w = cfg.get("warmup") if isinstance(cfg.get("warmup"), dict) else {}
    assert isinstance(w, dict)
    hot = number(w.get("hot_blocks"))
    effective = number(cfg.get("effective_bytes"))
    unit = number(w.get("block_bytes")) or 4096  # hot_blocks counts dm-cache's chunks for an lvmcache
    hot_bytes = int(min(hot * unit, effective or hot * unit)) if hot is not None else None
    hit = number(cfg.get("predicted_hit_ratio"))
    if hit is None and hot_bytes is None:
        return None
    return Prediction(
        hit, hot_bytes, number(w.get("seconds_63")), number(w.get("seconds_95")), number(w.get("promotion_probability"))
    )


def is_root() -> bool:
    return os.geteuid() == 0


def check_output(path: Path, what: str = "nothing was written") -> None:
    """Refused, before any work starts, when ``path`` cannot be a new file: it exists (a
    dangling link too, which would write elsewhere), or its folder is missing or not writable."""
    if os.path.lexists(path):
        kind = "is a link" if path.is_symlink() else "already exists"
        raise Refused(f"{path} {kind}; {what}. Choose another name or remove it.")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise Refused(f"the folder {folder} does not exist; {what}. Make it or choose another place.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise Refused(f"the folder {folder} is not writable; {what}. Choose another place.")
