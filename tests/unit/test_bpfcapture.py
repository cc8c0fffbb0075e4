"""The BPF tracer's pieces: the assembler's jumps, the BTF reader, the recorder's counted path,
and (as root, on a kernel with BTF) the kernel's verifier accepting both programs."""

from __future__ import annotations

import os
import struct
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
    members = layout["outer"]
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
