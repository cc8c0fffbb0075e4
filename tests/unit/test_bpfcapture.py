"""The BPF tracer's pieces: the assembler's jumps, the BTF reader, the recorder's counted path,
and (as root, on a kernel with BTF) the kernel's verifier accepting both programs."""

from __future__ import annotations

import mmap
import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from advisor.workload import bpfcapture, capfile, ebpf


def test_jumps_land_on_their_labels_past_wide_instructions():
    a = ebpf.Asm()
    a.jump("==", 1, 0, "out")  # 0
    a.imm64(2, 1 << 40)  # 1-2: two slots
    a.jump("!=", 1, 2, "out", reg=True)  # 3
    a.label("out")
    a.mov(0, 0)  # 4
    a.exit()
    code = a.code()
    assert len(code) == 6 * 8
    first = struct.unpack_from("<BBhi", code, 0)
    fourth = struct.unpack_from("<BBhi", code, 3 * 8)
    assert first[2] == 3  # 0 + 1 + 3 = 4
    assert fourth[2] == 0
    assert fourth[0] == 0x5D and fourth[1] == (2 << 4) | 1  # JNE | X, src r2, dst r1
    lo, hi = struct.unpack_from("<i", code, 8 + 4)[0], struct.unpack_from("<i", code, 16 + 4)[0]
    assert (hi << 32) | (lo & 0xFFFFFFFF) == 1 << 40


def test_a_jump_to_a_missing_label_is_refused():
    a = ebpf.Asm()
    a.jump("ja", 0, 0, "nowhere")
    with pytest.raises(ValueError, match="nowhere"):
        a.code()


def _btf(types: list[bytes], strings: bytes) -> bytes:
    body = b"".join(types)
    return struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(body), len(body), len(strings)) + body + strings


def test_btf_members_with_an_anonymous_union_and_a_bitfield():
    strings = b"\0outer\0a\0b\0c\0flags\0int\0"
    name = {s: strings.index(b"\0" + s.encode() + b"\0") + 1 for s in ("outer", "a", "b", "c", "flags", "int")}
    int_t = struct.pack("<III", name["int"], 1 << 24, 4) + struct.pack("<I", 32)  # id 1
    # id 2: an anonymous union of b and c at its start
    union = struct.pack("<III", 0, (5 << 24) | 2, 8) + struct.pack("<III", name["b"], 1, 0) + struct.pack(
        "<III", name["c"], 1, 0
    )
    # id 3: struct outer { int a; union { b; c; } (at 8 bytes); int flags:3 (bitfield) } with kind_flag
    outer = (
        struct.pack("<III", name["outer"], (1 << 31) | (4 << 24) | 3, 24)
        + struct.pack("<III", name["a"], 1, 0)
        + struct.pack("<III", 0, 2, 64)
        + struct.pack("<III", name["flags"], 1, (3 << 24) | 128)
    )
    layout = ebpf.struct_members(_btf([int_t, union, outer], strings), {"outer"})
    members = layout.structs["outer"]
    assert members["a"].offset == 0
    assert members["b"].offset == 8 and members["c"].offset == 8
    assert "flags" not in members


def test_btf_that_is_not_btf_is_refused():
    with pytest.raises(ebpf.BpfUnavailable):
        ebpf.struct_members(b"\0" * 64, {"request"})


def test_a_kernel_without_a_field_is_refused_in_words():
    with pytest.raises(ebpf.BpfUnavailable, match="lack"):
        bpfcapture.fields(False, {"request": {}})


def _recorder(tmp_path: Path, rate: float = 1.0) -> capfile.Recorder:
    folder = tmp_path / "cap"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    clock = [1_790_000_000.0]
    rec = capfile.Recorder(folder, fd, {"device": "wwn:t"}, rate, capfile.Limits(clock[0] + 7200, 1 << 30), clock=lambda: clock[0])
    return rec


def test_the_counted_path_adds_the_kernels_counts_and_keeps_only_the_sample(tmp_path):
    rec = _recorder(tmp_path, rate=0.5)
    offsets = np.arange(64, dtype=np.uint64) * np.uint64(capfile.UNIT)
    sampled = np.zeros(64, capfile.CAPTURED)
    sampled["t"] = 1_790_000_000.0 + np.arange(64) / 100
    sampled["offset"] = offsets
    sampled["length"] = 4096
    counts = {"requests": 1000, "reads": 700, "writes": 300, "read_bytes": 700 * 4096, "write_bytes": 300 * 4096}
    counts.update(sequential=40, bypassed=10, bypassed_bytes=10 << 20, bypassed_reads=9, lost=2)
    rec.add_counted(sampled, counts, 1_790_000_001.0)
    rec.add_counted(sampled[:0], {"requests": 5, "reads": 5}, 1_790_000_002.0)
    hour = rec.hours[1_790_000_001.0 // 3600 * 3600]
    assert (hour.requests, hour.reads, hour.writes, hour.sequential, hour.bypassed) == (1005, 705, 300, 40, 10)
    assert (hour.bypassed_bytes, hour.bypassed_reads, hour.lost) == (10 << 20, 9, 2)
    kept = np.concatenate(rec.pending)
    under = capfile.unit_hash(offsets) < np.uint64(rec.threshold)
    assert 0 < len(kept) < 64 and len(kept) == int(under.sum())
    assert hour.new_units == len(kept)
    rec.close("duration")
    cap = capfile.read_capture(capfile.capture_files(tmp_path / "cap"))
    assert len(cap.requests) == len(kept)
    assert cap.summaries[0]["requests"] == 1005


@pytest.mark.skipif(os.geteuid() != 0 or not ebpf.VMLINUX_BTF.exists(), reason="loading BPF needs root and BTF")
@pytest.mark.parametrize("bio", [False, True])
def test_the_running_kernels_verifier_accepts_the_program(bio):
    """Loads and attaches (nothing traced runs: the device 0:0 is never met) and detaches."""
    try:
        tracer = bpfcapture.BpfCapture(bpfcapture.Target(bio, 0, 0), capfile.threshold_for(1.0))
        with tracer:
            assert tracer.ring is not None
            assert int(tracer.totals()[0]) == 0
            tracer.set_threshold(5)
    except ebpf.BpfUnavailable as exc:
        if "Operation not permitted" in str(exc):  # a container without CAP_BPF
            pytest.skip(str(exc))
        raise
    assert tracer.fds == []


def test_the_recorder_follows_a_rate_the_tracer_lowered_but_never_raises_it(tmp_path):
    rec = _recorder(tmp_path)
    full = rec.threshold
    rec.lower(full // 8, 1_790_000_001.0)
    assert rec.threshold == full // 8 and abs(rec.rate - 1 / 8) < 1e-9
    rec.lower(full, 1_790_000_002.0)
    assert rec.threshold == full // 8


@pytest.fixture
def loop_device(tmp_path):
    """A 64 MiB loop device over a file in /dev/shm (as root, where losetup works), removed after."""
    if os.geteuid() != 0 or not ebpf.VMLINUX_BTF.exists() or not shutil.which("losetup"):
        pytest.skip("needs root, BTF and losetup")
    backing = Path(tempfile.mkdtemp(dir="/dev/shm")) / "disk.img"
    backing.write_bytes(os.urandom(1 << 20) * 64)
    made = subprocess.run(["losetup", "--find", "--show", str(backing)], check=False, capture_output=True, text=True)
    if made.returncode != 0:
        shutil.rmtree(backing.parent)
        pytest.skip(f"no loop device here: {made.stderr.strip()}")
    if shutil.which("udevadm"):  # udev's own first read of the new device, over before the test's
        subprocess.run(["udevadm", "settle", "--timeout=10"], check=False)
    yield made.stdout.strip()
    subprocess.run(["losetup", "-d", made.stdout.strip()], check=False)
    shutil.rmtree(backing.parent)


def _read_direct(device: str, offsets: list[int], length: int) -> None:
    fd = os.open(device, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, length)
    try:
        for at in offsets:
            os.preadv(fd, [buf], at)
    finally:
        os.close(fd)
        buf.close()


def test_on_this_kernel_every_read_is_counted_and_a_stream_classed_as_bcache_would(loop_device):
    """Reads through a real loop device: 200 random 4 KiB reads and one 8 MiB stream of 256 KiB
    reads; the program counts each, and keeps all (rate 1) with the classes the detector gives."""
    major, minor = (int(x) for x in Path(f"/sys/class/block/{Path(loop_device).name}/dev").read_text().split(":"))
    try:
        tracer = bpfcapture.BpfCapture(bpfcapture.Target(False, major, minor), capfile.threshold_for(1.0))
        tracer.__enter__()
    except ebpf.BpfUnavailable as exc:
        pytest.skip(str(exc))
    try:
        rng = np.random.default_rng(3)
        randoms = [int(x) * 8192 for x in rng.choice(4096, 200, replace=False)]  # 8 KiB apart: never a stream
        _read_direct(loop_device, randoms, 4096)
        _read_direct(loop_device, list(range(32 << 20, 40 << 20, 256 << 10)), 256 << 10)
        got: list[tuple[np.ndarray, dict[str, int]]] = []
        tracer._hand_over(lambda records, counts, now: got.append((records, counts)))
    finally:
        tracer.__exit__()
    records, counts = got[0]
    assert counts["requests"] == counts["reads"] == 232 and counts["writes"] == 0
    assert counts["read_bytes"] == 200 * 4096 + (8 << 20)
    assert len(records) == 232 and counts["lost"] == 0
    stream = records[records["length"] == 256 << 10]
    assert stream["offset"].tolist() == list(range(32 << 20, 40 << 20, 256 << 10))
    # 4 MiB is reached at the 16th read: bcache bypasses it and the rest
    assert stream["stream"].tolist() == [0] + [1] * 14 + [2] * 17
    assert counts["sequential"] == 31 and counts["bypassed"] == 17 and counts["bypassed_bytes"] == 17 * (256 << 10)
    assert (records["stream"][records["length"] == 4096] == 0).all()


def test_on_this_kernel_the_program_halves_its_rate_when_it_keeps_too_fast(loop_device):
    """At most ``kept_per_window`` kept in a quarter of a second: the 101st kept halves the rate in
    the kernel; every request is still counted."""
    major, minor = (int(x) for x in Path(f"/sys/class/block/{Path(loop_device).name}/dev").read_text().split(":"))
    full = capfile.threshold_for(1.0)
    try:
        tracer = bpfcapture.BpfCapture(bpfcapture.Target(False, major, minor), full, kept_per_window=100)
        tracer.__enter__()
    except ebpf.BpfUnavailable as exc:
        pytest.skip(str(exc))
    try:
        _read_direct(loop_device, [i * capfile.UNIT for i in range(400)], 4096)  # a unit each
        got: list[tuple[np.ndarray, dict[str, int]]] = []
        tracer._hand_over(lambda records, counts, now: got.append((records, counts)))
    finally:
        tracer.__exit__()
    records, counts = got[0]
    assert counts["requests"] == 400
    assert tracer.threshold <= full // 2
    assert len(records) >= 101
    assert (capfile.unit_hash(records["offset"][101:]) < np.uint64(full // 2)).all()
