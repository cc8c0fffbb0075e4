"""The history database: an embedded SQLite file with ordered schema migrations.

Lives under ``$XDG_STATE_HOME/cachewise`` (``~/.local/state/cachewise``) for users and
``/var/lib/cachewise`` for root; the front ends' state directory option or ``CACHEWISE_STATE_DIR``
override both.
Discovery snapshots are recorded here; later steps add probes, traces, plans and warm-up
samples as new migrations. ``PRAGMA user_version`` holds the schema version.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor import statedir
from advisor.errors import Described, codes, next_step
from advisor.inputs import BadJson, parse_json
from advisor.prediction import Prediction
from advisor.watch.sampler import Sample

if TYPE_CHECKING:  # modules that only type the records: opening the history must stay cheap (no numpy)
    from advisor.disks.devices import Inventory
    from advisor.disks.probe import ProbeResult
    from advisor.workload.analysis import Analysis

STATE_ENV = "CACHEWISE_STATE_DIR"
DB_NAME = "history.sqlite3"
BUSY_SECONDS = 5.0  # how long a write waits for another program that holds the database

# Append only: never edit a migration that has shipped; add a new one.
MIGRATIONS: tuple[str, ...] = (
    # 1: discovery snapshots, and each device identity seen over time.
    """
    CREATE TABLE snapshots (
        id INTEGER PRIMARY KEY,
        taken_at TEXT NOT NULL,
        hostname TEXT NOT NULL,
        udev TEXT NOT NULL,
        root INTEGER NOT NULL,
        device_count INTEGER NOT NULL,
        inventory_json TEXT NOT NULL
    );
    CREATE TABLE devices_seen (
        identity TEXT PRIMARY KEY,
        first_seen TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        last_name TEXT NOT NULL,
        last_path TEXT,
        size_bytes INTEGER NOT NULL,
        kind TEXT NOT NULL
    );
    CREATE INDEX snapshots_taken_at ON snapshots(taken_at);
    """,
    # 2: fio probe results, bound to the device's identity and size, with fio's full JSON.
    """
    CREATE TABLE probes (
        id INTEGER PRIMARY KEY,
        taken_at TEXT NOT NULL,
        identity TEXT,
        serial TEXT,
        wwn TEXT,
        size_bytes INTEGER NOT NULL,
        device TEXT NOT NULL,
        device_class TEXT NOT NULL,
        confidence TEXT NOT NULL,
        complete INTEGER NOT NULL,
        fio_version TEXT NOT NULL,
        result_json TEXT NOT NULL,
        fio_json TEXT NOT NULL
    );
    CREATE INDEX probes_identity ON probes(identity, size_bytes);
    """,
    # 3: workload analyses, with the trace's provenance.
    """
    CREATE TABLE analyses (
        id INTEGER PRIMARY KEY,
        taken_at TEXT NOT NULL,
        trace_path TEXT NOT NULL,
        trace_sha256 TEXT NOT NULL,
        trace_format TEXT NOT NULL,
        trace_meta_json TEXT NOT NULL,
        block_size INTEGER NOT NULL,
        result_json TEXT NOT NULL
    );
    """,
    # 4: caches made by cachewise with what their recommendation predicted, and the samples of
    # the watch (one per cache per tick; thinned to one a minute after a day).
    """
    CREATE TABLE caches (
        id INTEGER PRIMARY KEY,
        target TEXT NOT NULL,
        made_at REAL NOT NULL,
        plan_kind TEXT NOT NULL,
        prediction_json TEXT
    );
    CREATE INDEX caches_target ON caches(target, made_at);
    CREATE TABLE samples (
        id INTEGER PRIMARY KEY,
        target TEXT NOT NULL,
        t REAL NOT NULL,
        sample_json TEXT NOT NULL
    );
    CREATE INDEX samples_target_t ON samples(target, t);
    """,
)

# Samples older than a day are thinned to one a minute, older than a month to one an hour
# (the counters are cumulative, so the last sample of each bucket keeps the totals right).
THINNING = ((86400.0, 60.0), (30 * 86400.0, 3600.0))


codes({"history-unusable": "{why}"})


class HistoryError(Described):
    """The history database cannot be used; the message says why and what to do."""

    CODE = "history-unusable"


def default_state_dir() -> Path:
    override = os.environ.get(STATE_ENV)
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/var/lib/cachewise")
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "cachewise"


@dataclass(frozen=True)
class SnapshotRow:
    id: int
    taken_at: str
    hostname: str
    udev: str
    device_count: int


def _trouble(path: Path, exc: BaseException) -> HistoryError:
    """The HistoryError for what SQLite (or the file system) said, told apart: another program
    holds the database, the disk is full, the file is read-only, or it is damaged."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return HistoryError(
            f"the history database {path} is in use by another program (it stayed locked for {BUSY_SECONDS:g} s)",
            next=[next_step("wait-for-it")],
        )
    if "full" in text or getattr(exc, "errno", None) == errno.ENOSPC:
        return HistoryError(f"the disk that holds the history database {path} is full", next=[next_step("free-space")])
    if "readonly" in text or "read-only" in text or getattr(exc, "errno", None) in (errno.EROFS, errno.EACCES):
        return HistoryError(
            f"the history database {path} cannot be written ({exc})", next=[next_step("choose-state-dir")]
        )
    if isinstance(exc, sqlite3.DatabaseError):
        return HistoryError(
            f"{path} is not a usable cachewise history database: it is damaged or not a database ({exc})",
            next=[next_step("move-history-aside")],
        )
    return HistoryError(f"cannot open the history database {path} ({exc})", next=[next_step("choose-state-dir")])


def _json_row(text: object) -> Any:
    """A JSON column's value; None for one that is not JSON (written by something else)."""
    try:
        return parse_json(text) if isinstance(text, str) else None
    except BadJson:
        return None


class History:
    """A connection to the history database, migrated to the current schema on open. SQLite's
    errors become HistoryError saying which trouble it is (:func:`_trouble`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            statedir.ensure(path.parent)
            # The database file itself: a regular file, never a link (SQLite opens by path).
            os.close(statedir.open_in(path.parent, path.name, flags=os.O_RDWR | os.O_CREAT))
            self._db = sqlite3.connect(path, timeout=BUSY_SECONDS)
        except (OSError, sqlite3.Error) as exc:
            if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
                raise HistoryError(
                    f"the history database {path} is a link; cachewise does not follow links in its state directory",
                    next=[next_step("move-history-aside")],
                ) from None
            raise HistoryError(
                f"cannot open the history database {path} ({exc}); nothing was recorded",
                changed=True,
                next=[next_step("choose-state-dir")],
            ) from exc
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self.migrate()
        except sqlite3.Error as exc:
            self._db.close()
            raise _trouble(path, exc) from None

    @classmethod
    def open_default(cls, state_dir: Path | None = None) -> History:
        return cls((state_dir or default_state_dir()) / DB_NAME)

    @property
    def version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _newer(self, current: int) -> HistoryError:
        return HistoryError(
            f"{self.path} has schema version {current}, newer than this cachewise knows ({len(MIGRATIONS)})",
            next=[next_step("upgrade"), next_step("choose-state-dir")],
        )

    def migrate(self) -> None:
        """Bring the schema up to date in one transaction that holds the write lock from the
        start: two first starts at once migrate once (the second waits, then finds the schema
        current), and a crash leaves the version it had."""
        current = self.version
        if current > len(MIGRATIONS):
            raise self._newer(current)
        if current == len(MIGRATIONS):
            return
        level = self._db.isolation_level
        self._db.isolation_level = None  # the transaction is ours, statement by statement
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                current = self.version  # again, under the lock
                if current > len(MIGRATIONS):
                    raise self._newer(current)
                for script in MIGRATIONS[current:]:
                    for statement in script.split(";"):
                        if statement.strip():
                            self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        finally:
            self._db.isolation_level = level

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _sql(self) -> Iterator[sqlite3.Connection]:
        """The connection, with SQLite's errors as HistoryError (told apart by _trouble)."""
        try:
            yield self._db
        except sqlite3.Error as exc:
            raise _trouble(self.path, exc) from None
        except OverflowError:
            raise HistoryError(
                f"a number too large for SQLite was not recorded in {self.path}", changed=False
            ) from None

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._sql(), self._db:
            yield self._db

    def record_inventory(self, inv: Inventory) -> int:
        data = inv.to_json(show_all=True)
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO snapshots (taken_at, hostname, udev, root, device_count, inventory_json)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (inv.taken_at, inv.hostname, inv.udev, int(inv.root), len(inv.devices), json.dumps(data)),
            )
            for dev in inv.devices:
                if dev.identity is None:
                    continue
                db.execute(
                    "INSERT INTO devices_seen (identity, first_seen, last_seen, last_name, last_path, size_bytes, kind)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT(identity) DO UPDATE SET last_seen=excluded.last_seen,"
                    " last_name=excluded.last_name, last_path=excluded.last_path,"
                    " size_bytes=excluded.size_bytes, kind=excluded.kind",
                    (dev.identity, inv.taken_at, inv.taken_at, dev.name, dev.stable_path, dev.size_bytes, dev.kind),
                )
            return int(cur.lastrowid or 0)

    def snapshots(self, limit: int = 20) -> list[SnapshotRow]:
        with self._sql() as db:
            rows = db.execute(
                "SELECT id, taken_at, hostname, udev, device_count FROM snapshots ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [SnapshotRow(*row) for row in rows]

    def snapshot_json(self, snapshot_id: int) -> dict[str, Any] | None:
        with self._sql() as db:
            row = db.execute("SELECT inventory_json FROM snapshots WHERE id = ?", (snapshot_id,)).fetchone()
        data = _json_row(row[0]) if row else None
        return data if isinstance(data, dict) else None

    def has_snapshot(self, snapshot_id: int) -> bool:
        with self._sql() as db:
            return db.execute("SELECT 1 FROM snapshots WHERE id = ?", (snapshot_id,)).fetchone() is not None

    def device_seen(self, identity: str) -> dict[str, Any] | None:
        with self._sql() as db:
            cur = db.execute("SELECT * FROM devices_seen WHERE identity = ?", (identity,))
            row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([c[0] for c in cur.description], row, strict=True))

    def record_probe(self, result: ProbeResult, serial: str | None, wwn: str | None) -> int:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO probes (taken_at, identity, serial, wwn, size_bytes, device, device_class, confidence,"
                " complete, fio_version, result_json, fio_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    datetime.now(UTC).isoformat(timespec="seconds"),
                    result.identity,
                    serial,
                    wwn,
                    result.size_bytes,
                    result.device,
                    result.classification.device_class,
                    result.classification.confidence,
                    int(result.complete),
                    result.fio_version,
                    json.dumps(result.to_json()),
                    json.dumps(result.fio_json),
                ),
            )
            return int(cur.lastrowid or 0)

    def latest_probe(self, identity: str, size_bytes: int) -> dict[str, Any] | None:
        """The newest complete probe of this device (same identity and size), as JSON."""
        with self._sql() as db:
            row = db.execute(
                "SELECT result_json FROM probes WHERE identity = ? AND size_bytes = ? AND complete = 1"
                " ORDER BY id DESC LIMIT 1",
                (identity, size_bytes),
            ).fetchone()
        data = _json_row(row[0]) if row else None
        return data if isinstance(data, dict) else None

    def record_analysis(self, analysis: Analysis, trace_sha256: str, trace_meta: dict[str, Any]) -> int:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO analyses (taken_at, trace_path, trace_sha256, trace_format, trace_meta_json, block_size,"
                " result_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    datetime.now(UTC).isoformat(timespec="seconds"),
                    analysis.source,
                    trace_sha256,
                    analysis.source_format,
                    json.dumps(trace_meta),
                    analysis.block_size,
                    json.dumps(analysis.to_json()),
                ),
            )
            return int(cur.lastrowid or 0)

    def record_cache(self, target: str, plan_kind: str, prediction: Prediction | None, made_at: float) -> int:
        """A cache cachewise made on ``target`` (its name as the watch knows it)."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO caches (target, made_at, plan_kind, prediction_json) VALUES (?, ?, ?, ?)",
                (target, made_at, plan_kind, json.dumps(asdict(prediction)) if prediction else None),
            )
            return int(cur.lastrowid or 0)

    def made_caches(self, limit: int = 500) -> list[tuple[str, float, Prediction | None]]:
        """The caches cachewise made, newest first: (target, when, prediction)."""
        with self._sql() as db:
            rows = db.execute(
                "SELECT target, made_at, prediction_json FROM caches ORDER BY made_at DESC, id DESC LIMIT ?", (limit,)
            ).fetchall()
        out = []
        for target, made_at, data in rows:
            values = _json_row(data) if data else None
            prediction = None
            if isinstance(values, dict):
                try:
                    prediction = Prediction(**{k: v for k, v in values.items() if k in Prediction.__dataclass_fields__})
                except TypeError:  # written by another version: the cache is still listed, without it
                    prediction = None
            try:
                out.append((str(target), float(made_at), prediction))
            except (TypeError, ValueError):
                continue
        return out

    def record_samples(self, samples: list[Sample]) -> None:
        with self._tx() as db:
            db.executemany(
                "INSERT INTO samples (target, t, sample_json) VALUES (?, ?, ?)",
                [(s.target, s.t, json.dumps(s.to_json(raw=False))) for s in samples],
            )

    def samples(self, target: str, since: float = 0.0) -> list[Sample]:
        with self._sql() as db:
            rows = db.execute(
                "SELECT sample_json FROM samples WHERE target = ? AND t >= ? ORDER BY t", (target, since)
            ).fetchall()
        out = []
        for (data,) in rows:
            values = _json_row(data)
            try:
                out.append(Sample.from_json(values))
            except (TypeError, ValueError, KeyError, AttributeError):  # not a sample this version reads: left out
                continue
        return out

    def thin_samples(self, now: float) -> int:
        """Thin old samples (THINNING): keep the newest of each bucket. Returns how many went."""
        removed = 0
        with self._tx() as db:
            for age, bucket in THINNING:
                cur = db.execute(
                    "DELETE FROM samples WHERE t < ? AND id NOT IN (SELECT MAX(id) FROM samples WHERE t < ?"
                    " GROUP BY target, CAST(t / ? AS INTEGER))",
                    (now - age, now - age, bucket),
                )
                removed += cur.rowcount
        return removed
