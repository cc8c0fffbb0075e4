"""The core's context: the backends every use case runs over, and the history it records in.

Both front ends construct a :class:`Core` (``Core.for_machine()``, ``Core.for_snapshot()``, or
with fakes in tests) and hand it to the use cases, one module each in this package. History
writes never fail a use case: :meth:`Core.record` returns the warning, as a fact.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from advisor.disks.collect import RawSystem
from advisor.errors import CachewiseError, codes, next_step
from advisor.health.boot import BootFacts, read_facts
from advisor.history import History, HistoryError, default_state_dir
from advisor.runner import CommandRunner
from advisor.statedir import StateDirError
from advisor.watch.recorded import RecordedSampler
from advisor.watch.sampler import Sampler, SampleSource
from cachewise.core.backends import (
    DiscoveryBackend,
    Executor,
    LiveDiscovery,
    LiveExecutor,
    LiveProber,
    Prober,
    ReplayDiscovery,
)

codes(
    {
        "snapshot-unreadable": "cannot read the raw snapshot {path}: {why}",
        "history-unwritable": "the history database in {dir} could not be written ({why}); nothing was recorded",
        "snapshot-only": "this shows a saved snapshot of a machine, not this one",
    }
)


# A use case that did not run raises what stood in the way, as a code and its facts: the root
# error, whichever layer found it (a recipe, the plan language, the core itself).
Refused = CachewiseError


@dataclass
class Core:
    """The backends the use cases run over. ``live``: the inventory is this machine's, so its
    tools may be asked for versions and SSD wear. ``state_dir`` None records nothing."""

    discovery: DiscoveryBackend
    runner: CommandRunner = field(default_factory=CommandRunner)
    prober: Prober | None = None
    executor: Executor | None = None
    state_dir: Path | None = None
    live: bool = True
    _sampler: SampleSource | None = field(default=None, repr=False)
    # This machine's boot facts (advisor/health/boot.py), for the plans made here; None: none
    # are read (a snapshot, a test's fake machine).
    boot: Callable[[], BootFacts] | None = field(default=None, repr=False)
    # No prober (a snapshot's core, a test's fake): nothing is probed; a probe is refused.

    @classmethod
    def for_machine(cls, state_dir: Path | None = None) -> Core:
        """This machine: live discovery, fio probes, plans applied for real."""
        runner = CommandRunner()
        state = state_dir or default_state_dir()
        return cls(
            LiveDiscovery(runner),
            runner,
            LiveProber(runner),
            LiveExecutor(runner, state),
            state,
            live=True,
            boot=lambda: read_facts(runner),
        )

    @classmethod
    def for_snapshot(cls, raw: RawSystem, state_dir: Path | None = None) -> Core:
        """A saved snapshot: nothing is probed, applied or recorded; ``state_dir`` only supplies
        earlier probes."""
        return cls(ReplayDiscovery(raw), CommandRunner(), None, None, state_dir, live=False)

    @property
    def replay(self) -> bool:
        """The inventory is a saved snapshot of some machine: nothing is recorded or applied."""
        return isinstance(self.discovery, ReplayDiscovery)

    @classmethod
    def for_recording(cls, raw: RawSystem, samples: SampleSource) -> Core:
        """A saved snapshot whose caches play recorded samples (`cachewise demo`, `tui
        --replay-samples`): nothing is probed, applied, recorded or read from this machine."""
        return cls(ReplayDiscovery(raw), CommandRunner(), None, None, None, live=False, _sampler=samples)

    @property
    def recording(self) -> RecordedSampler | None:
        """The recording the caches' samples are played back from (None: this machine's kernel)."""
        return self._sampler if isinstance(self._sampler, RecordedSampler) else None

    @property
    def recorded(self) -> bool:
        """The caches' samples are a recording played back, not this machine's kernel."""
        return self.recording is not None

    def sampler(self) -> SampleSource:
        if self._sampler is None:
            self._sampler = Sampler(self.runner)
        return self._sampler

    def record(self, write: Callable[[History], object]) -> CachewiseError | None:
        """Write to the history database. A failure never fails the use case: the warning is
        returned for the front end to show (None: recorded, or nothing to record into)."""
        if self.state_dir is None:
            return None
        try:
            with History.open_default(self.state_dir) as hist:
                write(hist)
        except (HistoryError, StateDirError) as exc:
            return exc
        except (sqlite3.Error, OSError) as exc:  # read-only, full, locked by another program
            return Refused(
                "history-unwritable",
                changed=True,
                dir=self.state_dir,
                why=exc,
                next=[next_step("choose-state-dir")],
            )
        return None


def load_snapshot(path: Path) -> RawSystem:
    """A raw snapshot saved by a scan."""
    try:
        return RawSystem.load(path)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise Refused("snapshot-unreadable", path=path, why=exc) from None


def is_root() -> bool:
    return os.geteuid() == 0
