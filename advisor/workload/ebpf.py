"""The few pieces of eBPF the capture needs, through the bpf(2) system call alone: maps, a
program assembled here, a raw tracepoint to run it on, a BPF ring buffer read through mmap, and
the kernel's own type information (BTF, /sys/kernel/btf/vmlinux) for where a structure's
fields are on the running kernel.

No compiler, no libbpf, no bcc: the programs are a few dozen instructions, written with the
assembler below (kernel's Documentation/bpf/standardization/instruction-set.rst). Everything
here raises ``BpfUnavailable`` with the kernel's reason when the kernel or the caller cannot
load it (not root, no BTF, an older kernel, a verifier's refusal); the caller then traces
another way.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")
NR_BPF = 321  # x86_64
ATTR_SIZE = 128

# bpf(2) commands, map and program types
MAP_CREATE, MAP_LOOKUP, PROG_LOAD, RAW_TRACEPOINT_OPEN = 0, 1, 5, 17
MAP_ARRAY, MAP_PERCPU_ARRAY, MAP_RINGBUF = 2, 6, 27
MAPPABLE = 1 << 10  # BPF_F_MMAPABLE: an array this process reads and writes through mmap
PROG_RAW_TRACEPOINT, PROG_TRACING = 17, 26
TRACE_RAW_TP = 23  # the attach type of a BTF-typed raw tracepoint
# helpers
MAP_LOOKUP_ELEM, KTIME_GET_NS, RINGBUF_OUTPUT = 1, 5, 130
RB_NO_WAKEUP = 1  # bpf_ringbuf_output's flag: no wake-up queued for a reader

# instruction classes and operations
LD, LDX, ST, STX, ALU, JMP, ALU64 = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07
SIZES = {1: 0x10, 2: 0x08, 4: 0x00, 8: 0x18}
MEM, IMM64 = 0x60, 0x18
K, X = 0x00, 0x08
ALU_OPS = {
    "+": 0x00,
    "-": 0x10,
    "*": 0x20,
    "/": 0x30,
    "|": 0x40,
    "&": 0x50,
    "<<": 0x60,
    ">>": 0x70,
    "^": 0xA0,
    "=": 0xB0,
}
JUMPS = {"ja": 0x00, "==": 0x10, ">": 0x20, ">=": 0x30, "!=": 0x50, ">=s": 0x70, "<": 0xA0, "<=": 0xB0}
PSEUDO_MAP_FD = 1
FP = 10  # the frame pointer register


class BpfUnavailable(Exception):
    """The kernel or the caller cannot run the capture's program: why, in a few words."""


def _errno_text(code: int) -> str:
    return os.strerror(code) if code else "unknown error"


class _Sys:
    def __init__(self) -> None:
        # The system call's number, the instructions' and the maps' byte order are x86-64's
        if platform.machine() != "x86_64" or sys.byteorder != "little":
            raise BpfUnavailable(f"the capture's BPF program is written for x86-64, not {platform.machine()}")
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long

    def bpf(self, cmd: int, attr: bytes) -> int:
        buf = ctypes.create_string_buffer(attr, ATTR_SIZE)
        fd = int(self.libc.syscall(NR_BPF, cmd, buf, ATTR_SIZE))
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, _errno_text(code))
        return fd


_SYS: _Sys | None = None


def _sys() -> _Sys:
    global _SYS
    if _SYS is None:
        _SYS = _Sys()
    return _SYS


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class Asm:
    """A program as it is written: instructions and labels; ``code()`` resolves the jumps."""

    def __init__(self) -> None:
        self.parts: list[bytes | tuple[int, int, int, int, str]] = []  # a jump: code, dst, src, imm, label
        self.labels: dict[str, int] = {}
        self.at = 0  # instructions so far

    def _insn(self, code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> None:
        self.parts.append(struct.pack("<BBhi", code, (src << 4) | dst, off, _signed32(imm)))
        self.at += 1

    def label(self, name: str) -> None:
        self.labels[name] = self.at

    def mov(self, dst: int, value: int, reg: bool = False) -> None:
        self.alu(dst, "=", value, reg)

    def alu(self, dst: int, op: str, value: int, reg: bool = False) -> None:
        self._insn(ALU64 | ALU_OPS[op] | (X if reg else K), dst, value if reg else 0, 0, 0 if reg else value)

    def imm64(self, dst: int, value: int, map_fd: bool = False) -> None:
        self.parts.append(
            struct.pack("<BBhi", LD | IMM64, ((PSEUDO_MAP_FD if map_fd else 0) << 4) | dst, 0, _signed32(value))
            + struct.pack("<BBhi", 0, 0, 0, _signed32(value >> 32))
        )
        self.at += 2

    def load(self, dst: int, src: int, off: int, size: int) -> None:
        self._insn(LDX | MEM | SIZES[size], dst, src, off)

    def store(self, dst: int, off: int, src: int, size: int) -> None:
        self._insn(STX | MEM | SIZES[size], dst, src, off)

    def store_imm(self, dst: int, off: int, value: int, size: int) -> None:
        self._insn(ST | MEM | SIZES[size], dst, 0, off, value)

    def jump(self, op: str, dst: int, value: int, to: str, reg: bool = False) -> None:
        """``if dst OP value goto to`` (unsigned comparisons); op "ja" always jumps."""
        code = JMP | JUMPS[op] | (X if reg else K)
        self.parts.append((code, dst, value if reg else 0, 0 if reg else value, to))
        self.at += 1

    def call(self, helper: int) -> None:
        self._insn(JMP | 0x80, 0, 0, 0, helper)

    def exit(self) -> None:
        self._insn(JMP | 0x90)

    def code(self) -> bytes:
        out = b""
        at = 0
        for part in self.parts:
            if isinstance(part, bytes):
                out += part
                at += len(part) // 8
                continue
            code, dst, src, imm, target = part
            if target not in self.labels:
                raise ValueError(f"no label {target}")
            out += struct.pack("<BBhi", code, (src << 4) | dst, self.labels[target] - at - 1, _signed32(imm))
            at += 1
        return out


def create_map(kind: int, key_size: int, value_size: int, entries: int, flags: int = 0) -> int:
    try:
        return _sys().bpf(MAP_CREATE, struct.pack("<IIIII", kind, key_size, value_size, entries, flags))
    except OSError as exc:
        raise BpfUnavailable(f"the kernel refused a BPF map ({exc.strerror})") from None


def lookup_percpu(map_fd: int, index: int, value_size: int, cpus: int) -> npt.NDArray[np.uint64]:
    """One PERCPU_ARRAY entry of u64 fields, summed over the ``cpus`` possible CPUs."""
    stride = (value_size + 7) // 8 * 8
    key = ctypes.create_string_buffer(struct.pack("<I", index), 4)
    val = ctypes.create_string_buffer(stride * cpus)
    attr = struct.pack("<IIQQQ", map_fd, 0, ctypes.addressof(key), ctypes.addressof(val), 0)
    _sys().bpf(MAP_LOOKUP, attr)
    fields = np.frombuffer(val.raw, np.uint64).reshape(-1, stride // 8)[:, : value_size // 8]
    summed: npt.NDArray[np.uint64] = fields.sum(axis=0, dtype=np.uint64)
    return summed


def possible_cpus() -> int:
    """The CPUs the kernel sizes a per-CPU value by (e.g. "0-3"): read, never guessed (a
    buffer too small would be written past)."""
    try:
        text = Path("/sys/devices/system/cpu/possible").read_text().strip()
        count = 0
        for part in text.split(","):
            low, _, high = part.partition("-")
            count += int(high or low) - int(low) + 1
    except (OSError, ValueError) as exc:
        raise BpfUnavailable(f"cannot tell this machine's possible CPUs ({exc})") from None
    return max(count, 1)


def load_program(asm: Asm, attach_btf_id: int = 0, name: bytes = b"cachewise") -> int:
    """A raw tracepoint's program; with ``attach_btf_id`` (the tracepoint's btf_trace_NAME
    typedef), a BTF-typed one, whose loads from the tracepoint's arguments the verifier
    checks against the kernel's types, so they need no helper call."""
    code = asm.code()
    insns = ctypes.create_string_buffer(code, len(code))
    license_ = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(1 << 18)
    typed = attach_btf_id > 0
    attr = struct.pack(
        "<IIQQIIQII16sIIIIQIIQII",
        PROG_TRACING if typed else PROG_RAW_TRACEPOINT,
        len(code) // 8,
        ctypes.addressof(insns),
        ctypes.addressof(license_),
        1,
        len(log),
        ctypes.addressof(log),
        0,
        0,
        name[:15],
        0,  # prog_ifindex
        TRACE_RAW_TP if typed else 0,  # expected_attach_type
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        attach_btf_id,
    )
    try:
        return _sys().bpf(PROG_LOAD, attr)
    except OSError as exc:
        # the verifier's reason is its last line but its statistics ("processed N insns ...")
        lines = [line for line in log.value.decode("ascii", "replace").strip().splitlines() if line.strip()]
        why = next((line for line in reversed(lines) if not line.startswith("processed ")), exc.strerror or "")
        raise BpfUnavailable(f"the kernel refused the capture's BPF program ({exc.strerror}: {why})") from None


def attach_raw_tracepoint(prog_fd: int, tracepoint: str, typed: bool = False) -> int:
    """Attach; a BTF-typed program names its tracepoint itself (the name is left out)."""
    name = ctypes.create_string_buffer(tracepoint.encode())
    try:
        return _sys().bpf(RAW_TRACEPOINT_OPEN, struct.pack("<QI", 0 if typed else ctypes.addressof(name), prog_fd))
    except OSError as exc:
        raise BpfUnavailable(f"the kernel refused the {tracepoint} tracepoint ({exc.strerror})") from None


class RingBuffer:
    """A BPF ring buffer's records, read through its two mappings (the consumer's position,
    writable; the producer's position and the data, mapped twice so a record never wraps)."""

    BUSY, DISCARD = 1 << 31, 1 << 30
    HEADER = 8

    def __init__(self, map_fd: int, size: int) -> None:
        page = mmap.PAGESIZE
        self.size = size
        self.consumer = mmap.mmap(map_fd, page, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=0)
        self.producer = mmap.mmap(map_fd, page + 2 * size, mmap.MAP_SHARED, mmap.PROT_READ, offset=page)
        self.page = page

    def read(self, record: np.dtype[Any]) -> npt.NDArray[Any]:
        """The committed records of one fixed size (``record`` with its 8-byte header first:
        length and page offset), oldest first; their space is handed back."""
        cons = struct.unpack_from("<Q", self.consumer, 0)[0]
        prod = struct.unpack_from("<Q", self.producer, 0)[0]
        if prod == cons:
            return np.empty(0, record)
        step = record.itemsize
        start = self.page + (cons & (self.size - 1))
        got = np.frombuffer(self.producer, record, count=(prod - cons) // step, offset=start)
        # a record still being written ends what can be taken now
        busy = np.flatnonzero(got["len"] & np.uint32(self.BUSY))
        if len(busy):
            got = got[: busy[0]]
        out: npt.NDArray[Any] = got[(got["len"] & np.uint32(self.DISCARD)) == 0].copy()
        struct.pack_into("<Q", self.consumer, 0, cons + len(got) * step)
        return out

    def close(self) -> None:
        self.consumer.close()
        self.producer.close()


# BTF: only what finding a structure's members needs
BTF_MAGIC = 0xEB9F
BTF_STRUCT, BTF_UNION, BTF_TYPEDEF = 4, 5, 8
_EXTRA = {1: 4, 3: 12, 4: 12, 5: 12, 6: 8, 13: 8, 14: 4, 15: 12, 17: 4, 19: 12}  # bytes after the type, per kind
_PER_MEMBER = {4, 5, 6, 13, 15, 19}


@dataclass(frozen=True)
class Member:
    offset: int  # bytes from the structure's start
    type_id: int


@dataclass(frozen=True)
class Layout:
    """What the kernel's BTF says: structures' members by name, and type ids by name."""

    structs: dict[str, dict[str, Member]]
    typedefs: dict[str, int]


def struct_members(btf: bytes, names: set[str], typedefs: frozenset[str] = frozenset()) -> Layout:
    """For each structure named in ``names``: its members' byte offsets, anonymous members'
    own members included (bitfields left out); and the type id of each typedef named in
    ``typedefs`` (a BTF-typed tracepoint is named by its ``btf_trace_NAME`` typedef)."""
    magic, _version, _flags, hdr_len = struct.unpack_from("<HBBI", btf, 0)
    if magic != BTF_MAGIC:
        raise BpfUnavailable("the kernel's BTF is not in a form this reader knows")
    type_off, type_len, str_off, _str_len = struct.unpack_from("<IIII", btf, 8)
    types_at = hdr_len + type_off
    strings_at = hdr_len + str_off

    def name_at(off: int) -> str:
        end = btf.index(b"\0", strings_at + off)
        return btf[strings_at + off : end].decode("ascii", "replace")

    wanted = {n.encode() for n in names}
    wanted_typedefs = {n.encode() for n in typedefs}
    offsets: list[int] = [0]  # by type id (1-based)
    found: dict[str, int] = {}
    typedef_ids: dict[str, int] = {}
    at, end = types_at, types_at + type_len
    while at < end:
        name_off, info, _size = struct.unpack_from("<III", btf, at)
        kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
        offsets.append(at)
        if kind == BTF_STRUCT and vlen and name_off:
            s = strings_at + name_off
            name = btf[s : btf.index(b"\0", s)]
            if name in wanted and name.decode() not in found:
                found[name.decode()] = len(offsets) - 1
        elif kind == BTF_TYPEDEF and name_off and wanted_typedefs:
            s = strings_at + name_off
            name = btf[s : btf.index(b"\0", s)]
            if name in wanted_typedefs:
                typedef_ids.setdefault(name.decode(), len(offsets) - 1)
        extra = _EXTRA.get(kind, 0)
        at += 12 + (extra * vlen if kind in _PER_MEMBER else extra)

    def members(type_id: int, base: int, out: dict[str, Member]) -> None:
        t = offsets[type_id]
        _, info, _ = struct.unpack_from("<III", btf, t)
        bitfields = info >> 31
        for i in range(info & 0xFFFF):
            m_name, m_type, m_off = struct.unpack_from("<III", btf, t + 12 + 12 * i)
            bits = m_off & 0xFFFFFF if bitfields else m_off
            if bitfields and m_off >> 24:
                continue  # a bitfield: not a field the program reads
            if m_name == 0:
                inner = _strip(btf, offsets, m_type)
                if inner is not None:
                    members(inner, base + bits // 8, out)
                continue
            out.setdefault(name_at(m_name), Member(base + bits // 8, m_type))

    result: dict[str, dict[str, Member]] = {}
    for struct_name, type_id in found.items():
        result[struct_name] = {}
        members(type_id, 0, result[struct_name])
    return Layout(result, typedef_ids)


def _strip(btf: bytes, offsets: list[int], type_id: int) -> int | None:
    """The struct or union a member's type is (through typedefs and qualifiers), or None."""
    for _ in range(16):
        if type_id <= 0 or type_id >= len(offsets):
            return None
        _, info, ref = struct.unpack_from("<III", btf, offsets[type_id])
        kind = (info >> 24) & 0x1F
        if kind in (BTF_STRUCT, BTF_UNION):
            return type_id
        if kind not in (8, 9, 10, 11, 18):  # typedef, volatile, const, restrict, type tag
            return None
        type_id = ref
    return None


def kernel_layout(names: set[str], typedefs: frozenset[str] = frozenset()) -> Layout:
    try:
        btf = VMLINUX_BTF.read_bytes()
    except OSError as exc:
        why = "this kernel has no BTF" if exc.errno == errno.ENOENT else exc.strerror
        raise BpfUnavailable(f"cannot read the kernel's type information ({why})") from None
    try:
        return struct_members(btf, names, typedefs)
    except (struct.error, ValueError, IndexError):
        raise BpfUnavailable("the kernel's type information could not be read") from None
