"""lvm2's own sizing rules for cache pools (M-CHUNK-1, M-META-1), without numpy, so the
commands that plan and apply changes start quickly.

Checked against lvm2 2.03.16 in the lab: for a cache pool of the same size it picks the same
chunk and metadata size (tests/lab/test_recommend_lab.py)."""

from __future__ import annotations

from advisor.units import KiB, MiB

# lvm2's rules (M-CHUNK-1, M-META-1).
LVM_EXTENT = 4 * MiB
LVM_PV_METADATA = 1 * MiB
CHUNK_UNIT = 32 * KiB
DEFAULT_CHUNK = 64 * KiB
MAX_CHUNKS = 1_000_000
META_BYTES_PER_CHUNK = 16 + 20 + 8
META_OVERHEAD = 4 * MiB


def lvm_chunk_size(cache_bytes: int) -> int:
    """lvm2's chunk size for a cache pool of this size: 64 KiB, or more to stay under
    1,000,000 chunks, in multiples of 32 KiB (M-CHUNK-1)."""
    chunk = DEFAULT_CHUNK
    if cache_bytes // chunk > MAX_CHUNKS:
        chunk = -(-cache_bytes // MAX_CHUNKS)
        chunk = -(-chunk // CHUNK_UNIT) * CHUNK_UNIT
    return chunk


def lvm_metadata_size(cache_bytes: int, chunk: int, extent: int = LVM_EXTENT) -> int:
    """lvm2's cache metadata size (M-META-1): 44 bytes per chunk plus 4 MiB, in whole extents."""
    raw = -(-(cache_bytes // chunk) * META_BYTES_PER_CHUNK // 512) * 512 + META_OVERHEAD
    return -(-raw // extent) * extent


def round_down(n: float, unit: int) -> int:
    return int(n // unit) * unit


def round_up(n: float, unit: int) -> int:
    return int(-(-n // unit)) * unit


def lvm_space(cache_bytes: int) -> tuple[int, int, int]:
    """(chunk, metadata, SSD space) for a cache pool: data + metadata + its pmspare + the PV's
    own label and metadata area."""
    chunk = lvm_chunk_size(cache_bytes)
    meta = lvm_metadata_size(cache_bytes, chunk)
    return chunk, meta, cache_bytes + 2 * meta + LVM_PV_METADATA


def lvm_max_cache(fast_bytes: int) -> int:
    """The largest cache pool data size (whole extents) that fits on a PV of this size."""
    extents = (fast_bytes - LVM_PV_METADATA) // LVM_EXTENT
    size = extents * LVM_EXTENT
    while size > 0 and lvm_space(size)[2] - LVM_PV_METADATA > extents * LVM_EXTENT:
        size -= LVM_EXTENT
    return max(size, 0)
