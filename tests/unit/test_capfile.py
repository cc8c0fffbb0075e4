"""The capture service's files (advisor/workload/capfile.py): sampling, frames, hours, the
budget, power cuts and damage, and the export to libCacheSim's oracleGeneral format."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from advisor.workload import capfile
from advisor.workload.capfile import REQUEST, Limits, Recorder

T0 = 1_790_000_000.0 - (1_790_000_000.0 % 3600)  # a clock hour's start


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def roomy(_fd: int) -> Any:
    return SimpleNamespace(f_bavail=10**9, f_frsize=4096, f_blocks=2 * 10**9)


def requests(n: int, start: float, seconds: float, seed: int = 1, span: int = 1 << 30) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    out = np.empty(n, REQUEST)
    out["t"] = start + np.sort(rng.random(n)) * seconds
    out["offset"] = rng.integers(0, span // 4096, n).astype(np.uint64) * np.uint64(4096)
    out["length"] = rng.choice([4096, 8192, 65536], n)
    out["write"] = rng.random(n) < 0.3
    return out


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    d = tmp_path / "cap"
    d.mkdir(mode=0o700)
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    yield d, fd
    os.close(fd)


def record(
    folder: tuple[Path, int],
    reqs: np.ndarray[Any, Any],
    rate: float = 1.0,
    budget: int = 1 << 30,
    statvfs: Any = roomy,
    batch: float = 10.0,
    close: str | None = "duration",
    until: float = T0 + 10 * 86400,
    seen: set[int] | None = None,
) -> Recorder:
    """Feed ``reqs`` to a recorder in batches of ``batch`` seconds, ticking between them."""
    d, fd = folder
    clock = Clock(float(reqs["t"][0]))
    rec = Recorder(d, fd, {"device": "/dev/sdb", "until": until}, rate, Limits(until, budget), clock, statvfs, seen)
    edges = np.arange(float(reqs["t"][0]), float(reqs["t"][-1]) + batch, batch)
    for lo in edges:
        part = reqs[(reqs["t"] >= lo) & (reqs["t"] < lo + batch)]
        clock.now = lo + batch
        rec.add(part)
        if rec.tick():
            break
    if close:
        rec.close(rec.stopped or close)
    return rec


def test_an_unsampled_capture_reads_back_exactly_with_each_hours_counts(folder: tuple[Path, int]) -> None:
    reqs = requests(20_000, T0 + 600, 2.5 * 3600)
    record(folder, reqs)
    files = capfile.capture_files(folder[0])
    assert len(files) == 3  # a file per clock hour: 0:10-1:00, 1:00-2:00, 2:00-2:40
    cap = capfile.read_capture(files)
    assert cap.rate == 1.0 and not cap.damaged
    back = cap.requests
    assert len(back) == len(reqs)
    assert np.array_equal(back["offset"], reqs["offset"]) and np.array_equal(back["length"], reqs["length"])
    assert np.array_equal(back["write"], reqs["write"])
    assert np.abs(back["t"] - reqs["t"]).max() < 1e-6  # microseconds
    hours = cap.summaries
    assert [h["start"] for h in hours] == [T0, T0 + 3600, T0 + 7200]
    assert all(h["hour"].endswith(":00:00Z") for h in hours)
    for h in hours:
        inside = reqs[(reqs["t"] >= h["start"]) & (reqs["t"] < h["start"] + 3600)]
        assert h["requests"] == len(inside)
        assert h["writes"] == int(inside["write"].sum()) and h["reads"] == len(inside) - h["writes"]
        assert h["read_bytes"] == int(inside["length"][inside["write"] == 0].astype(np.int64).sum())
    units = np.unique(reqs["offset"] // np.uint64(capfile.UNIT))
    assert sum(h["new_footprint_bytes"] for h in hours) == len(units) * capfile.UNIT
    assert [e["why"] for e in cap.ends] == ["duration"]


def test_a_resumed_capture_counts_as_new_footprint_only_what_is_new_to_the_whole_capture(
    folder: tuple[Path, int],
) -> None:
    """A reboot must not restart the footprint's growth: the hour after it reads the same hot
    units again, and only the units no earlier run saw are new (at the capture's sampling rate)."""
    d = folder[0]
    rate = 1 / 4
    record(folder, requests(6_000, T0 + 60, 1200, seed=3, span=512 << 20), rate=rate, close=None)  # a power cut
    before = capfile.read_capture(capfile.capture_files(d)).requests
    seen = capfile.units_seen(capfile.capture_files(d), capfile.threshold_for(rate))
    assert seen == set((before["offset"] // np.uint64(capfile.UNIT)).tolist()) and seen
    record(folder, requests(6_000, T0 + 4000, 1200, seed=4, span=512 << 20), rate=rate, seen=seen)
    cap = capfile.read_capture(capfile.capture_files(d))
    later = cap.requests[cap.requests["t"] >= T0 + 3600]
    new = set((later["offset"] // np.uint64(capfile.UNIT)).tolist()) - seen
    assert 0 < len(new) < len(set((later["offset"] // np.uint64(capfile.UNIT)).tolist()))
    hours = {h["start"]: h for h in cap.summaries}
    assert hours[T0 + 3600]["new_footprint_bytes"] == len(new) * capfile.UNIT / rate
    total = len(set((cap.requests["offset"] // np.uint64(capfile.UNIT)).tolist()))
    assert sum(h["new_footprint_bytes"] for h in cap.summaries) == total * capfile.UNIT / rate  # as one run's


def test_sampling_keeps_whole_64k_units_at_the_rate(folder: tuple[Path, int]) -> None:
    reqs = requests(40_000, T0, 1800, span=4 << 30)
    record(folder, reqs, rate=1 / 8)
    cap = capfile.read_capture(capfile.capture_files(folder[0]))
    assert cap.rate == 1 / 8
    kept_units = set((cap.requests["offset"] // np.uint64(capfile.UNIT)).tolist())
    all_units = reqs["offset"] // np.uint64(capfile.UNIT)
    expected = capfile.unit_hash(reqs["offset"]) < np.uint64(capfile.threshold_for(1 / 8))
    # every request of a kept unit is kept, none of the others
    assert len(cap.requests) == int(expected.sum())
    assert kept_units == set(all_units[expected].tolist())
    assert 0.10 < len(kept_units) / len(set(all_units.tolist())) < 0.15
    # the hours count every request, sampled or not
    assert sum(h["requests"] for h in cap.summaries) == len(reqs)


def test_the_budget_halves_the_rate_and_the_reader_keeps_the_lowest_rates_sample(folder: tuple[Path, int]) -> None:
    reqs = requests(60_000, T0, 3000, span=4 << 30)
    rec = record(folder, reqs, budget=2 << 20, until=T0 + 6 * 3600)  # 2 MiB for 6 hours: too little at rate 1
    assert 1 / 256 < rec.rate < 1.0
    cap = capfile.read_capture(capfile.capture_files(folder[0]))
    assert cap.threshold == rec.threshold
    at_lowest = capfile.unit_hash(reqs["offset"]) < np.uint64(rec.threshold)
    # exactly the sample a capture at the lowest rate from the start would hold (what was
    # written before the cut is filtered)
    assert len(cap.requests) == int(at_lowest.sum())
    assert set(cap.requests["offset"].tolist()) == set(reqs["offset"][at_lowest].tolist())


def test_a_spent_budget_stops_the_capture_with_its_reason(folder: tuple[Path, int]) -> None:
    reqs = requests(60_000, T0, 600, span=4 << 30)
    rec = record(folder, reqs, budget=1 << 14, until=T0 + 700)  # less than the first minute takes
    assert rec.stopped == "budget"
    cap = capfile.read_capture(capfile.capture_files(folder[0]))
    assert cap.ends[-1]["why"] == "budget"
    assert capfile.folder_bytes(folder[0]) < (1 << 14) + 80_000  # a minute past it at most


def test_a_nearly_full_file_system_stops_the_capture(folder: tuple[Path, int]) -> None:
    def full(_fd: int) -> Any:
        return SimpleNamespace(f_bavail=1000, f_frsize=4096, f_blocks=10**6)  # 4 MB of 4 GB left

    rec = record(folder, requests(5_000, T0, 600), statvfs=full)
    assert rec.stopped == "disk-full"
    assert capfile.read_capture(capfile.capture_files(folder[0])).ends[-1]["why"] == "disk-full"


def frame_ends(data: bytes) -> list[int]:
    """Where each frame of a capture file ends."""
    at = data.index(b"\n", len(capfile.MAGIC)) + 1
    ends = []
    while at < len(data):
        at += capfile.FRAME.size + capfile.FRAME.unpack_from(data, at)[3]
        ends.append(at)
    return ends


def test_a_power_cut_anywhere_loses_only_the_frame_being_written(folder: tuple[Path, int]) -> None:
    reqs = requests(6_000, T0 + 60, 900)
    record(folder, reqs, close=None)  # no end frame: the machine died
    (path,) = capfile.capture_files(folder[0])
    whole = path.read_bytes()
    ends = frame_ends(whole)
    assert len(ends) >= 10 and ends[-1] == len(whole)
    header_end = whole.index(b"\n", len(capfile.MAGIC)) + 1
    rng = np.random.default_rng(3)
    for cut in [*rng.integers(header_end, len(whole), 40).tolist(), *ends[:3], header_end]:
        path.write_bytes(whole[:cut])
        got = capfile.read_file(path)
        complete = sum(1 for e in ends if e <= cut)
        assert len(got.chunks) + len(got.summaries) == complete  # records, and the hour so far after each
        last_end = max([header_end, *(e for e in ends if e <= cut)])
        assert got.torn_bytes == cut - last_end
        n = sum(len(r) for _, r in got.chunks)
        if n:  # what was read is what was written, in order
            assert np.array_equal(np.concatenate([r for _, r in got.chunks])["offset"], reqs["offset"][:n])
        if got.summaries:  # the hour's counts survive up to the last flush (every request is kept at rate 1)
            last_frame = max(len(r) for _, r in got.chunks)
            assert n - last_frame <= got.summaries[-1]["requests"] <= n
    for cut in (0, 5, header_end - 1):  # inside the header: not a capture file yet
        path.write_bytes(whole[:cut])
        with pytest.raises(capfile.CaptureFileError):
            capfile.read_file(path)


def frame_starts(data: bytes) -> list[int]:
    return [data.index(b"\n", len(capfile.MAGIC)) + 1, *frame_ends(data)[:-1]]


def test_a_damaged_kind_is_damage_never_a_frame_passed_over_unseen(folder: tuple[Path, int]) -> None:
    """The CRC covers the payload, not the head: a records frame whose kind turns into another
    kind, or into one this version does not know (which a reader skips whole as a later
    version's), is found by the kind's copies and counted as damage; the rest reads whole."""
    reqs = requests(6_000, T0 + 60, 900)
    record(folder, reqs)
    (path,) = capfile.capture_files(folder[0])
    whole = path.read_bytes()
    full = [at for at in frame_starts(whole) if whole[at + 4] == ord("R") and capfile.FRAME.unpack_from(whole, at)[3] > capfile.RECORDS.size]
    at = full[1]
    payload = whole[at + capfile.FRAME.size :]
    lost = capfile.RECORDS.unpack_from(payload)[2]
    assert lost > 0
    for kind in (ord("S"), ord("E"), ord("P"), ord("R") ^ 0x80):
        data = bytearray(whole)
        data[at + 4] = kind
        path.write_bytes(bytes(data))
        got = capfile.read_file(path)
        assert got.torn_why == "a frame's head is damaged"
        assert got.torn_bytes == capfile.FRAME.size + capfile.FRAME.unpack_from(whole, at)[3]
        assert sum(len(r) for _, r in got.chunks) == len(reqs) - lost


def test_files_written_before_the_kinds_copies_read_as_before(folder: tuple[Path, int]) -> None:
    reqs = requests(3_000, T0 + 60, 600)
    record(folder, reqs)
    (path,) = capfile.capture_files(folder[0])
    data = bytearray(path.read_bytes())
    for at in frame_starts(bytes(data)):
        assert data[at + 5 : at + 8] == bytes([data[at + 4]]) * 3
        data[at + 5 : at + 8] = bytes(3)  # as cachewise wrote them until 2026-12-07
    path.write_bytes(bytes(data))
    got = capfile.read_file(path)
    assert not got.torn_bytes and sum(len(r) for _, r in got.chunks) == len(reqs) and got.summaries and got.ends


def test_damage_in_the_middle_is_found_by_the_checksum(folder: tuple[Path, int]) -> None:
    record(folder, requests(6_000, T0 + 60, 900))
    (path,) = capfile.capture_files(folder[0])
    data = bytearray(path.read_bytes())
    full = capfile.read_file(path)
    middle = len(data) // 2
    data[middle] ^= 0xFF
    path.write_bytes(bytes(data))
    got = capfile.read_file(path)
    assert 0 < len(got.chunks) < len(full.chunks)
    assert got.torn_why in ("a frame fails its checksum", "a frame's head is damaged")
    cap = capfile.read_capture([path])
    assert cap.damaged and "bytes left unread" in cap.damaged[0]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "bad header"),
        (b"CACHEWISE-CAPTURE 9\n{}\n", "version '9'"),
        (b"CACHEWISE-CAPTURE 1\n[1, 2]\n", "corrupt header"),
        (b"CACHEWISE-CAPTURE 1\n" + b"{" * 70000, "corrupt header"),
        (b"CACHEWISE-TRACE 1\n{}\n", "bad header"),
    ],
)
def test_files_that_are_not_captures_say_so(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "x-20260101T000000Z.cwcap"
    path.write_bytes(content)
    with pytest.raises(capfile.CaptureFileError, match=why):
        capfile.read_file(path)


def hostile_frames() -> list[tuple[bytes, str]]:
    def framed(kind: bytes, payload: bytes, length: int | None = None) -> bytes:
        import struct
        import zlib

        head = struct.pack("<4sBxxxII", b"CWFR", kind[0], len(payload) if length is None else length, zlib.crc32(payload))
        return head + payload

    bomb = capfile.RECORDS.pack(T0, 1, 1) + __import__("zlib").compress(b"\0" * (16 << 20))
    return [
        (framed(b"R", b"", length=1 << 31), "head is damaged"),  # a 2 GiB "payload"
        (framed(b"R", bomb), "cannot be decoded"),  # a decompression bomb claiming one record
        (framed(b"R", capfile.RECORDS.pack(0.0, 1, 1 << 30)), "out of range"),  # a billion records
        (framed(b"R", capfile.RECORDS.pack(float("nan"), 1, 1)), "out of range"),
        (framed(b"R", capfile.RECORDS.pack(0.0, 0, 1)), "out of range"),  # threshold 0
        (framed(b"S", b"[1]"), "not a JSON object"),
        (framed(b"S", b"\xff\xfe"), "cannot be decoded"),
        (b"CWFX" + b"\0" * 12, "head is damaged"),
    ]


@pytest.mark.parametrize(("frame", "why"), hostile_frames())
def test_hostile_frames_are_skipped_without_harm(tmp_path: Path, frame: bytes, why: str) -> None:
    """A hostile or damaged frame costs itself alone: the reader finds the next good frame."""
    path = tmp_path / "x-20260101T000000Z.cwcap"
    good = capfile.records_frame(requests(10, T0, 1), T0, capfile.threshold_for(1.0))
    path.write_bytes(capfile.header({"device": "/dev/sdb"}) + good + frame + good)
    got = capfile.read_file(path)
    assert len(got.chunks) == 2 and why in got.torn_why
    assert got.torn_bytes == len(frame)


def test_a_damaged_frame_in_the_middle_of_an_hour_costs_that_frame_alone(tmp_path: Path) -> None:
    """Bit rot in one frame: the frames after it are read again from the next good one; a torn
    tail after it is counted too, and the reason given is the first damage's."""
    path = tmp_path / "x-20260101T000000Z.cwcap"
    frames = [capfile.records_frame(requests(10, T0 + i, 1 + i), T0 + i, capfile.threshold_for(1.0)) for i in range(4)]
    rotten = bytearray(frames[1])
    rotten[len(rotten) // 2] ^= 0x40
    tail = frames[3][: len(frames[3]) // 2]  # a power cut's torn last frame
    path.write_bytes(capfile.header({"device": "/dev/sdb"}) + frames[0] + bytes(rotten) + frames[2] + tail)
    got = capfile.read_file(path)
    assert [len(records) for _, records in got.chunks] == [10, 10]
    assert got.chunks[1][1]["offset"].tolist() == capfile.read_file(path).chunks[1][1]["offset"].tolist()
    assert got.torn_why == "a frame fails its checksum" and got.torn_bytes == len(rotten) + len(tail)


def test_a_file_of_frame_tags_claiming_long_payloads_is_read_in_bounded_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile: every 16 bytes a frame tag claiming half a MiB of payload with a wrong CRC. The
    search past damage checks at most the file's size and RESYNC_BYTES, then leaves the rest
    unread (unbounded, it would check 32,768 candidates of half a MiB each)."""
    import struct

    monkeypatch.setattr(capfile, "RESYNC_BYTES", 1 << 16)
    body = b"".join(struct.pack("<4sBxxxII", b"CWFR", ord("R"), 1 << 19, 0) for _ in range(1 << 16))  # 1 MiB
    path = tmp_path / "x-20260101T000000Z.cwcap"
    path.write_bytes(capfile.header({"device": "/dev/sdb"}) + body)
    checked: list[int] = []
    real = capfile._frame_at
    monkeypatch.setattr(capfile, "_frame_at", lambda data, at, c: (checked.append(at), real(data, at, c))[1])
    got = capfile.read_file(path)
    assert got.chunks == [] and got.torn_bytes == len(body) and got.torn_why == "a frame fails its checksum"
    assert 1 < len(checked) < 5  # the budget (1 MiB and 64 KiB) stops the search after two candidates


def test_another_versions_frame_kinds_are_skipped_whole(tmp_path: Path) -> None:
    path = tmp_path / "x-20260101T000000Z.cwcap"
    good = capfile.records_frame(requests(10, T0, 1), T0, capfile.threshold_for(1.0))
    path.write_bytes(capfile.header({"device": "/dev/sdb"}) + good + capfile.frame(b"Z", b"later") + good)
    got = capfile.read_file(path)
    assert len(got.chunks) == 2 and not got.torn_bytes


def test_files_of_two_devices_are_not_mixed(tmp_path: Path) -> None:
    a, b = tmp_path / "a-20260101T000000Z.cwcap", tmp_path / "b-20260101T000000Z.cwcap"
    a.write_bytes(capfile.header({"device": "/dev/sdb"}))
    b.write_bytes(capfile.header({"device": "/dev/sdc"}))
    with pytest.raises(capfile.CaptureFileError, match="2 devices"):
        capfile.read_capture([a, b])


def test_links_and_other_names_in_the_folder_are_not_capture_files(folder: tuple[Path, int]) -> None:
    record(folder, requests(100, T0, 60))
    d = folder[0]
    (d / "notes.txt").write_text("x")
    (d / "capture-20260101T000000Z.cwcap.tmp").write_text("x")
    os.symlink("/etc/passwd", d / "capture-20200101T000000Z.cwcap")
    assert all(p.name.startswith("capture-") and not p.is_symlink() for p in capfile.capture_files(d))
    assert len(capfile.capture_files(d)) == 1


def test_the_initial_rate_samples_at_most_16_gib_of_the_device() -> None:
    assert capfile.initial_rate(500 << 30) == 1 / 32
    assert capfile.initial_rate(8 << 30) == 1.0
    assert capfile.initial_rate(4 * 10**12) == 1 / 256


def test_oracle_general_export_by_hand(tmp_path: Path) -> None:
    reqs = np.zeros(4, REQUEST)
    reqs["t"] = [T0, T0 + 1, T0 + 2, T0 + 3]
    reqs["offset"] = [0, 8192, 4096, 0]
    reqs["length"] = [8192, 4096, 4096, 4096]  # blocks 0-1, 2, 1, 0
    cap = capfile.Capture([], {}, reqs, capfile.threshold_for(1.0), [], [], [])
    out = tmp_path / "trace.oracleGeneral"
    with out.open("wb") as fh:
        assert capfile.export_oracle_general(cap, fh, 4096) == 5
    data = out.read_bytes()
    assert len(data) == 5 * 24
    rec = np.frombuffer(data, np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")]))
    assert rec["id"].tolist() == [0, 1, 2, 1, 0]
    assert rec["t"].tolist() == [0, 0, 1, 2, 3]
    assert rec["next"].tolist() == [4, 3, -1, -1, -1]
    assert set(rec["size"].tolist()) == {4096}


def test_oracle_general_export_in_pieces_is_the_export_in_one(tmp_path: Path) -> None:
    """The export is written in pieces from the end (a bounded memory, whatever the requests'
    sizes): every piece size, down to one request a piece, writes the same file as the whole
    export at once, whose next-request links are checked against a plain dictionary walk."""
    reqs = requests(600, T0, 600, span=4 << 20)  # 1,024 blocks: many repeats, across pieces
    cap = capfile.Capture([], {}, reqs, capfile.threshold_for(1.0), [], [], [])
    whole = tmp_path / "whole"
    with whole.open("wb") as fh:
        n = capfile.export_oracle_general(cap, fh, 4096, chunk=1 << 40)
    rec = np.frombuffer(whole.read_bytes(), capfile.ORACLE_GENERAL)
    assert len(rec) == n > len(reqs)
    upcoming: dict[int, int] = {}
    expected = [0] * n
    for i in range(n - 1, -1, -1):
        expected[i] = upcoming.get(int(rec["id"][i]), -1)
        upcoming[int(rec["id"][i])] = i
    assert rec["next"].tolist() == expected
    for chunk in (1, 7, 64, 1000):
        piece = tmp_path / f"piece-{chunk}"
        with piece.open("wb") as fh:
            assert capfile.export_oracle_general(cap, fh, 4096, chunk=chunk) == n
        assert piece.read_bytes() == whole.read_bytes(), chunk


def test_oracle_general_export_reads_in_libcachesim(tmp_path: Path) -> None:
    import libcachesim as lcs  # in the test extra: never skipped
    reqs = requests(3000, T0, 600, span=64 << 20)
    reqs["length"] = 4096
    cap = capfile.Capture([], {}, reqs, capfile.threshold_for(1.0), [], [], [])
    out = tmp_path / "trace.oracleGeneral"
    with out.open("wb") as fh:
        n = capfile.export_oracle_general(cap, fh)
    reader = lcs.TraceReader(str(out), lcs.TraceType.ORACLE_GENERAL_TRACE)
    ids = [req.obj_id for req in reader]
    assert len(ids) == n == len(reqs)
    assert ids == (reqs["offset"] // np.uint64(4096)).tolist()


def zipf_requests(n: int, blocks: int, seconds: float, seed: int = 1) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(np.arange(1, blocks + 1, dtype=float) ** -1.0)
    cdf /= cdf[-1]
    chosen = rng.permutation(blocks)[np.searchsorted(cdf, rng.random(n))]
    out = np.empty(n, REQUEST)
    out["t"] = T0 + np.sort(rng.random(n)) * seconds
    out["offset"] = chosen.astype(np.uint64) * np.uint64(4096)
    out["length"] = 4096
    out["write"] = rng.random(n) < 0.2
    return out


def test_a_sampled_capture_is_analysed_at_the_whole_devices_scale(folder: tuple[Path, int]) -> None:
    from advisor.workload import analysis, sampled
    from advisor.workload.traces import ImportStats, Trace

    reqs = zipf_requests(150_000, 500_000, 3 * 3600)
    record(folder, reqs, rate=1 / 16)
    cap = capfile.read_capture(capfile.capture_files(folder[0]))
    assert 0.03 < len(cap.requests) / len(reqs) < 0.15  # a hot unit in or out moves it from 1/16
    got = sampled.analyze_capture(cap, "cap")
    full = analysis.analyze(Trace(reqs, "cachewise", "full", ImportStats(), {}), sequential_cutoff=0)
    # the request figures are the hours' counts of every request, not estimates
    assert (got.requests, got.read_requests, got.write_bytes) == (full.requests, full.read_requests, full.write_bytes)
    assert abs(got.footprint_bytes / full.footprint_bytes - 1) < 0.1
    # one sample of about 9,000 requests: SHARDS' error is largest where the sample holds few
    # blocks (at 1% of the footprint, a few dozen)
    for share, within in ((0.01, 0.05), (0.05, 0.03), (0.2, 0.03), (0.5, 0.03)):
        size = share * full.footprint_blocks
        want = np.interp(size, full.curve_sizes_blocks, full.curve_read_hit_ratio)
        have = np.interp(size, got.curve_sizes_blocks, got.curve_read_hit_ratio)
        assert abs(have - want) < within, (share, have, want)
    assert got.write_backlog_bytes == [] and got.curve_mode.startswith("sampled")


def test_streams_are_classed_from_every_request_not_from_the_sample(folder: tuple[Path, int]) -> None:
    from advisor.workload.streams import StreamDetector

    rand = zipf_requests(20_000, 100_000, 600)
    stream = np.empty(512, REQUEST)  # a 512 MiB scan in 1 MiB reads, over the same ten minutes
    stream["t"] = T0 + np.linspace(1, 599, 512)
    stream["offset"] = (np.uint64(1) << np.uint64(32)) + np.arange(512, dtype=np.uint64) * np.uint64(1 << 20)
    stream["length"] = 1 << 20
    stream["write"] = 0
    both = np.concatenate([rand, stream])
    both = both[np.argsort(both["t"], kind="stable")]
    record(folder, both, rate=1 / 8)
    cap = capfile.read_capture(capfile.capture_files(folder[0]))
    whole = StreamDetector(capfile.CUTOFF).classify(both)
    kept = capfile.unit_hash(both["offset"]) < np.uint64(cap.threshold)
    assert np.array_equal(cap.requests["stream"], whole[kept])
    big = cap.requests[cap.requests["length"] == 1 << 20]
    assert len(big) > 30 and (big["stream"] == StreamDetector.BYPASSED).mean() > 0.9  # past the 4 MiB cutoff
    hours = cap.summaries
    assert sum(h["bypassed"] for h in hours) == int((whole == StreamDetector.BYPASSED).sum())
    assert sum(h["bypassed_reads"] for h in hours) == int(((whole == 2) & (both["write"] == 0)).sum())


def test_the_cli_shows_exports_and_analyses_a_capture_folder(
    folder: tuple[Path, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from cachewise.cli import main

    reqs = zipf_requests(30_000, 50_000, 2 * 3600)
    record(folder, reqs, rate=1 / 4)
    d = str(folder[0])
    assert main(["capture", "show", d, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["schema"] == "cachewise.capture/1" and shown["requests"] == len(reqs)
    assert shown["sample_rate"] == 0.25 and len(shown["hours"]) == 2 and shown["damaged"] == []
    assert main(["capture", "show", d]) == 0
    assert "30,000 requests" in capsys.readouterr().out
    out = tmp_path / "c.oracleGeneral"
    assert main(["capture", "export", d, "-o", str(out), "--json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert out.stat().st_size == 24 * exported["records"] and exported["sample_rate"] == 0.25
    assert main(["capture", "export", d, "-o", str(out)]) == 1  # it exists now: refused, not overwritten
    assert "already exists" in capsys.readouterr().err
    assert main(["--state-dir", str(tmp_path / "state"), "analyze", "--json", d]) == 0
    analysed = json.loads(capsys.readouterr().out)
    assert analysed["requests"] == len(reqs) and analysed["source_format"] == "capture"
    span = analysed["periods"]  # the capture across time: two hours in 300 s windows, one hot set
    assert span["window_seconds"] == 300 and len(span["windows"]) == 24
    assert [ph["kind"] for ph in span["phases"]] == ["hot set"] and span["days"] == []
    assert main(["analyze", "--no-record", d]) == 0
    text = capsys.readouterr().out
    assert "Captured" in text and "Phases" in text and "hot set" in text
    assert main(["analyze", "--json", "--no-record", "--sequential-cutoff", "1m", d]) == 1
    assert "capture time" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["capture", "show", "/nonexistent/cap"], "neither a capture file nor a folder of them; nothing was read"),
        (["capture", "start", "/dev/sdb", "--for", "soon"], "nothing was captured"),
        (["capture", "export", "/nonexistent", "-o", "/tmp/x", "--block-size", "3"], "nothing was written"),
    ],
)
def test_bad_capture_arguments_say_one_sentence(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    from cachewise.cli import main

    assert main(argv) == 1
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and err.count("\n") <= 2


def test_capturing_needs_root(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from cachewise.cli import main
    from cachewise.core import capture

    monkeypatch.setattr(capture, "is_root", lambda: False)
    assert main(["capture", "start", "/dev/sdb"]) == 1
    assert "needs root" in capsys.readouterr().err


def test_starting_a_finished_capture_exits_4_which_the_unit_counts_as_success(
    folder: tuple[Path, int], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After a week the timer still starts the unit at every boot: the refusal is one sentence and
    status 4, which cachewise-capture@.service lists in SuccessExitStatus, so the unit is not
    left failed; any other refusal stays 1."""
    from cachewise.cli import capture as cli_capture
    from cachewise.cli import main
    from cachewise.core import capture

    d = folder[0]
    record(folder, requests(2_000, T0, 600), rate=1 / 64, close="duration", until=T0 + 600)
    monkeypatch.setattr(capture, "is_root", lambda: True)
    monkeypatch.setattr(capture, "scan", lambda core: None)
    plan = SimpleNamespace(stable="/dev/sdb", devnode="/dev/sdb", device="sdb", event="block_rq_issue", size_bytes=500 << 30)
    monkeypatch.setattr(capture, "plan_capture", lambda inv, device: plan)
    assert main(["capture", "start", "/dev/sdb", "--dir", str(d)]) == cli_capture.FINISHED == 4
    err = capsys.readouterr().err
    assert "its time was up" in err and "Traceback" not in err and err.count("\n") == 1
    assert main(["capture", "start", "/dev/sdb", "--dir", str(d), "--json"]) == cli_capture.FINISHED
    said = capsys.readouterr()
    assert json.loads(said.out) == {"schema": "cachewise.capture-run/1", "finished": True, "folder": str(d),
                                    "device": "/dev/sdb", "how": json.loads(said.out)["how"]}
    assert "its time was up" in said.out and said.err.count("\n") == 1
    plan.stable = "/dev/sdc"  # another device's folder: a refusal like any other
    assert main(["capture", "start", "/dev/sdc", "--dir", str(d)]) == 1
    unit = (Path(__file__).parents[2] / "packaging/debian/cachewise-capture@.service").read_text()
    assert f"\nSuccessExitStatus={cli_capture.FINISHED}\n" in unit


def test_a_damaged_capture_file_in_the_folder_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cachewise.cli import main

    d = tmp_path / "cap"
    d.mkdir()
    (d / "capture-20260101T000000Z.cwcap").write_bytes(b"CACHEWISE-CAPTURE 1\n{not json\n")
    assert main(["capture", "show", str(d)]) == 1
    assert "corrupt header; nothing was read" in capsys.readouterr().err


def test_resuming_continues_an_unfinished_capture_and_refuses_a_finished_one(folder: tuple[Path, int]) -> None:
    from cachewise.core.capture import resume_point
    from cachewise.core.context import Refused

    d = folder[0]
    assert resume_point(d, "/dev/sdb", T0, 3600, 500 << 30) == (T0 + 3600, 1 / 32, False)
    reqs = requests(2_000, T0, 600)
    record(folder, reqs, rate=1 / 64, close=None, until=T0 + 86400)  # cut short (a power cut)
    until, rate, resumed = resume_point(d, "/dev/sdb", T0 + 700, 3600, 500 << 30)
    assert (until, rate, resumed) == (T0 + 86400, 1 / 64, True)  # its own end and rate
    with pytest.raises(Refused) as other:
        resume_point(d, "/dev/sdc", T0 + 700, 3600, 500 << 30)
    assert other.value.code == "capture-other-device"
    with pytest.raises(Refused) as finished:
        resume_point(d, "/dev/sdb", T0 + 2 * 86400, 3600, 500 << 30)
    assert finished.value.code == "capture-finished"


def test_the_rate_is_halved_to_keep_the_sample_what_the_analysis_reads_quickly(folder: tuple[Path, int]) -> None:
    d, fd = folder
    reqs = requests(50_000, T0, 600, span=64 << 30)
    clock = Clock(T0)
    limits = Limits(T0 + 86400, 1 << 40, max_records=100_000)  # a day, at most 100,000 kept
    rec = Recorder(d, fd, {"device": "/dev/sdb", "until": T0 + 86400}, 1.0, limits, clock, roomy)
    for lo in np.arange(T0, T0 + 600, 10.0):
        clock.now = lo + 10
        rec.add(reqs[(reqs["t"] >= lo) & (reqs["t"] < lo + 10)])
        rec.tick()
    rec.close("duration")
    # 50,000 requests in 10 minutes project to 7.2 million a day: 1/128 keeps under 100,000
    assert 1 / 256 <= rec.rate <= 1 / 64


def test_late_requests_join_their_hour_whatever_the_wall_clock_says(folder: tuple[Path, int]) -> None:
    """Requests read after their hour turned (the trace pipe lags), a wall clock an hour ahead of
    the records' (a clock step), a rate at which almost nothing is kept: every request is still
    counted once, in its own hour, and the counts are written once a minute, not at every tick."""
    d, fd = folder
    reqs = requests(20_000, T0 + 3000, 1200, span=64 << 30)  # 50 minutes past to 10 past the next hour
    clock = Clock(T0 + 5 * 3600)
    rec = Recorder(d, fd, {"device": "/dev/sdb", "until": T0 + 86400}, 1 / 4096, Limits(T0 + 86400, 1 << 30), clock,
                   roomy)
    for lo in np.arange(T0 + 3000, T0 + 4200, 1.0):  # a second's requests, handed over in quarters
        part = reqs[(reqs["t"] >= lo) & (reqs["t"] < lo + 1)]
        for quarter in np.array_split(part, 4):
            rec.add(quarter)
            clock.now += 0.25
            assert rec.tick() == ""
    rec.close("interrupt")
    files = capfile.capture_files(d)
    cap = capfile.read_capture(files)
    counts = {h["start"]: h["requests"] for h in cap.summaries}
    assert counts == {T0: int((reqs["t"] < T0 + 3600).sum()), T0 + 3600: int((reqs["t"] >= T0 + 3600).sum())}
    s_frames = sum(len(capfile.read_file(p).summaries) for p in files)
    assert s_frames <= 2 * (1200 / 60 + 2)  # at most two hours' counts a minute, and the close
    assert cap.ends[-1]["why"] == "interrupt"


def test_a_run_that_reaches_its_end_says_duration(folder: tuple[Path, int]) -> None:
    d, fd = folder
    clock = Clock(T0)
    rec = Recorder(d, fd, {"device": "/dev/sdb", "until": T0 + 100}, 1.0, Limits(T0 + 100, 1 << 30), clock, roomy)
    rec.add(requests(100, T0, 50))
    clock.now = T0 + 101
    assert rec.tick() == "duration" and rec.stopped == "duration"


@pytest.mark.parametrize(
    "hour",
    [{"requests": [1]}, {"requests": "abc"}, {"requests": 1e999}, {"requests": -5}, {"start": -1e999},
     {"reads": 10**4000}, {"first": 1e300}],
)
def test_an_hours_counts_out_of_range_are_damage(tmp_path: Path, hour: dict[str, Any]) -> None:
    path = tmp_path / "capture-20260101T000000Z.cwcap"
    good = capfile.records_frame(requests(10, T0, 1), T0, capfile.threshold_for(1.0))
    frame = capfile.frame(b"S", __import__("json").dumps({"start": T0, "requests": 10, **hour}).encode())
    path.write_bytes(capfile.header({"device": "/dev/sdb"}) + good + frame)
    got = capfile.read_file(path)
    assert got.summaries == [] and got.torn_why in (
        "an hour's counts are out of range",
        "a frame cannot be decoded (Infinity is not a JSON number)",
        "a frame cannot be decoded (-Infinity is not a JSON number)",
    )


def test_an_unreadable_file_among_others_is_damage_not_the_end(folder: tuple[Path, int]) -> None:
    record(folder, requests(3_000, T0, 3 * 3600))
    files = capfile.capture_files(folder[0])
    files[1].write_bytes(b"")  # a power cut right after the file was made
    cap = capfile.read_capture(files)
    assert len(cap.files) == len(files) - 1 and "bad header" in cap.damaged[0]


def test_a_frame_cut_short_by_a_signal_sends_what_follows_to_a_new_file(
    folder: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    d, fd = folder
    clock = Clock(T0)
    rec = Recorder(d, fd, {"device": "/dev/sdb", "until": T0 + 3600}, 1.0, Limits(T0 + 3600, 1 << 30), clock, roomy)
    rec.add(requests(500, T0, 50))
    clock.now = T0 + 61
    rec.tick()
    real_write = os.write
    calls = []

    def cut(fd_: int, data: Any) -> int:  # the first write of the next flush is cut by SIGTERM half-way
        if not calls:
            calls.append(1)
            real_write(fd_, bytes(data[: len(data) // 2]))
            raise KeyboardInterrupt
        return real_write(fd_, data)

    rec.add(requests(500, T0 + 62, 50, seed=2))
    monkeypatch.setattr(os, "write", cut)
    clock.now = T0 + 130
    with pytest.raises(KeyboardInterrupt):
        rec.tick()
    rec.close("interrupt")  # as the capture does after the interrupt
    cap = capfile.read_capture(capfile.capture_files(d))
    assert len(cap.requests) == 1000, "the records of the cut frame were written again, in the new file"
    assert cap.ends[-1]["why"] == "interrupt" and len(cap.files) == 2 and cap.damaged
