"""Property-based tests (Hypothesis): whatever the input, the trace importers, the plan loader
and the unit parsers answer with a result in range or with cachewise's own error, never another
exception. Derandomised with a fixed budget, so the unit tier stays fast and repeatable."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.plan.checks import CheckError
from advisor.plan.checks import from_json as check_from_json
from advisor.plan.model import Plan, PlanError
from advisor.units import MAX_DURATION, MAX_SIZE, UnitError, parse_duration, parse_size
from advisor.workload.traces import MAGIC, MAX_LENGTH, MAX_OFFSET, REQUEST, TraceError, load_trace
from recipes.bcache import bcache_create
from recipes.lvmcache import CacheSpec, lvmcache_attach
from tests.conftest import FIXTURES

FAST = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
INV = build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))
PLANS = [lvmcache_attach(INV, "labvg/data", "nvme0n1", CacheSpec(256 << 20)).to_json(),
         bcache_create(INV, "sda", "nvme0n1", mode="writeback").to_json()]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


@FAST
@given(st.text(max_size=30))
def test_size_parser(text: str) -> None:
    try:
        value = parse_size(text)
    except UnitError:
        return
    assert 1 <= value <= MAX_SIZE


@FAST
@given(st.text(max_size=30))
def test_duration_parser(text: str) -> None:
    try:
        value = parse_duration(text)
    except UnitError:
        return
    assert 0 < value <= MAX_DURATION and math.isfinite(value)


def imported(path: Path, fmt: str = "auto") -> None:
    """Load a trace; if it loads, every request is in range."""
    try:
        trace = load_trace(path, fmt)  # type: ignore[arg-type]
    except TraceError:
        return
    r = trace.requests
    assert len(r) > 0
    assert np.isfinite(r["t"]).all() and (r["t"] >= 0).all()
    assert (r["offset"] < MAX_OFFSET).all() and (r["length"] > 0).all() and (r["length"] <= MAX_LENGTH).all()


fio_line = st.one_of(
    st.builds(lambda t, act, off, n: f"{t} /dev/sdb {act} {off} {n}",
              st.integers(-5, 10**12), st.sampled_from(["read", "write", "trim", "wat", "add"]),
              st.integers(-(2**65), 2**65), st.integers(-(2**40), 2**40)),
    st.text(max_size=40))


@FAST
@given(st.sampled_from(["fio version 2 iolog", "fio version 3 iolog"]), st.lists(fio_line, max_size=30))
def test_fio_iolog_importer(tmp_path: Path, header: str, lines: list[str]) -> None:
    path = tmp_path / "t.iolog"
    path.write_text("\n".join([header, *lines]) + "\n")
    imported(path)


blk_line = st.one_of(
    st.builds(lambda t, act, rw, sec, n: f"  8,0    1  1  {t}  377  {act}  {rw} {sec} + {n} [dd]",
              st.sampled_from(["0.000000001", "1e400", "nan", "12.5"]), st.sampled_from(["D", "Q", "C"]),
              st.sampled_from(["R", "W", "RS", "FN"]), st.integers(-5, 2**64), st.integers(0, 2**40)),
    st.builds(lambda sec: f"  8,0    1  2  0.5  377  D   R {sec}", st.integers(0, 10**6)),
    st.text(max_size=60))


@FAST
@given(st.lists(blk_line, min_size=1, max_size=30))
def test_blkparse_importer(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "t.txt"
    path.write_text("\n".join(lines) + "\n")
    imported(path, "blkparse")


csv_row = st.one_of(
    st.builds(lambda t, op, off, n: f"{t},host,0,{op},{off},{n},10", st.sampled_from(["1", "nan", "-1", "1e999", "x"]),
              st.sampled_from(["Read", "Write", "Trim"]), st.integers(-(2**64), 2**64), st.integers(-1, 2**40)),
    st.text(max_size=60))


@FAST
@given(st.lists(csv_row, min_size=1, max_size=30))
def test_csv_importer(tmp_path: Path, rows: list[str]) -> None:
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    imported(path, "csv")


@FAST
@given(st.binary(max_size=40), st.binary(max_size=400))
def test_native_trace_reader(tmp_path: Path, header: bytes, body: bytes) -> None:
    path = tmp_path / "t.cwtrace"
    path.write_bytes(MAGIC + header + b"\n" + body)
    imported(path, "cachewise")
    records = np.frombuffer(body[: len(body) // REQUEST.itemsize * REQUEST.itemsize], dtype=REQUEST)
    path.write_bytes(MAGIC + b"{}\n" + records.tobytes())
    imported(path)


def mutate(data: Any, path: list[int], value: Any) -> Any:
    """Replace or delete (value ...) one node of a JSON document, chosen by ``path``."""
    node, parent, key = data, None, None
    for step in path:
        if isinstance(node, dict) and node:
            key = sorted(node)[step % len(node)]
        elif isinstance(node, list) and node:
            key = step % len(node)
        else:
            break
        parent, node = node, node[key]
    if parent is None:
        return value
    if value is ... and isinstance(parent, dict):
        del parent[key]
    else:
        parent[key] = None if value is ... else value
    return data


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(range(len(PLANS))), st.lists(st.integers(0, 50), max_size=6), json_values | st.just(...))
def test_plan_loader_refuses_any_damage_with_plan_error(which: int, path: list[int], value: Any) -> None:
    data = mutate(json.loads(json.dumps(copy.deepcopy(PLANS[which]))), path, value)
    try:
        plan = Plan.from_json(data)
    except PlanError:
        return
    assert plan.steps and all(d.identity for d in plan.devices)


@FAST
@given(json_values)
def test_plan_loader_on_any_json(value: Any) -> None:
    try:
        Plan.loads(json.dumps(value))
    except PlanError:
        pass


@FAST
@given(json_values)
def test_check_reader_on_any_json(value: Any) -> None:
    try:
        check_from_json(value)
    except CheckError:
        pass


# --- the loaders root reads on a user's word: plans as text, journals, snapshots ---

@FAST
@given(st.text(max_size=400) | st.sampled_from([json.dumps(p) for p in PLANS]).map(
    lambda t: t.replace('"argv": [', '"argv": [], "argv": [', 1)))
@example('{"schema": "cachewise.plan/\u00b2"}')
@example('{"schema": "cachewise.plan/' + "9" * 5000 + '"}')
def test_plan_loader_on_any_text(text: str) -> None:
    """Duplicate keys, deep nesting, NaN, broken UTF-8 in disguise: a PlanError or a plan."""
    try:
        Plan.loads(text)
    except PlanError:
        pass


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(range(len(PLANS))), st.lists(st.integers(0, 50), max_size=6), json_values | st.just(...))
def test_an_accepted_plan_describes_itself_from_its_commands(which: int, path: list[int], value: Any) -> None:
    data = mutate(json.loads(json.dumps(copy.deepcopy(PLANS[which]))), path, value)
    try:
        plan = Plan.from_json(data)
    except PlanError:
        return
    for s in plan.steps:  # computed, never read: whatever the file said
        assert s.description and not s.description.startswith("run ")
    assert isinstance(plan.destroys, tuple) and Plan.loads(plan.dumps()) == plan


JOURNAL_LINES = [json.dumps({"time": "t", "event": "plan", "plan": PLANS[0]}),
                 json.dumps({"time": "t", "event": "step-begin", "step": "pvcreate"}),
                 json.dumps({"time": "t", "event": "step-end", "step": "pvcreate"})]


@FAST
@given(st.binary(max_size=300) | st.lists(st.sampled_from(JOURNAL_LINES), max_size=4).map(
    lambda lines: "\n".join(lines).encode()), st.integers(0, 4000))
def test_journal_reader_on_any_file(tmp_path: Path, body: bytes, cut: int) -> None:
    """Any bytes, or a journal cut anywhere by a crash, then appended to: JournalError or records,
    and an append always starts a line of its own."""
    from advisor.apply.journal import Journal, JournalError

    d = tmp_path / "state" / "journal"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "20260101T000000-x.jsonl"
    path.write_bytes(body[:cut] if cut < len(body) else body)
    journal = Journal(path)
    try:
        before = journal.records()
        journal.problem()
    except JournalError:
        return
    journal.write("abandoned")
    after = journal.records()
    assert after[:len(before)] == before and after[-1]["event"] == "abandoned"
    path.unlink()


SNAPSHOT = json.loads((FIXTURES / "lab-scan" / "raw-udev.json").read_text())


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.lists(st.integers(0, 60), max_size=6), json_values | st.just(...)), min_size=1,
                max_size=3))
def test_snapshot_loader_on_any_damage(tmp_path: Path, changes: list[tuple[list[int], Any]]) -> None:
    """A snapshot damaged anywhere is refused with cachewise's own sentence, or read whole: its
    inventory builds, lists and serialises without any other exception."""
    from cachewise.core.context import Refused, load_snapshot

    data = json.loads(json.dumps(SNAPSHOT))
    for path, value in changes:
        data = mutate(data, path, value)
        data = None if data is ... else data
    file = tmp_path / "raw.json"
    file.write_text(json.dumps(data))
    try:
        raw = load_snapshot(file)
    except Refused:
        return
    inv = build_inventory(raw)
    inv.tree(show_all=True)
    json.dumps(inv.to_json(show_all=True))
