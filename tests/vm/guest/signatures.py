"""Write a ZFS pool label (pool "tank") and a bcachefs superblock on two partitions, as blkid
finds them: neither file system's tools or kernel module exist in the lab guest, and discovery
reads only signatures. Layouts: util-linux libblkid's zfs.c (uberblock magic 0x00bab10c in the
uberblock array at 128 KiB of the first two 256 KiB labels, an XDR nvlist at 16 KiB) and the
bcachefs superblock (magic at 4 KiB + 24, its offset field 8 sectors)."""

import struct
import sys
import uuid


def zfs(path: str) -> None:
    with open(path, "r+b") as fh:
        for label in (0, 256 << 10):
            for i in range(4):
                fh.seek(label + (128 << 10) + i * 1024)
                fh.write(struct.pack("<QQ", 0x00BAB10C, 5000))
            name, value = b"name", b"tank"
            pair = struct.pack(">III", 0, 0, len(name)) + name + struct.pack(">III", 9, 1, len(value)) + value + bytes(4)
            pair = struct.pack(">I", len(pair)) + pair[4:]
            fh.seek(label + (16 << 10))
            fh.write(bytes(12) + pair + bytes(8))


def bcachefs(path: str) -> None:
    magic = bytes.fromhex("c68573f666ce90a9d96a60cf803df7ef")
    sb = bytes(16) + struct.pack("<HHHH", 14, 14, 0, 0) + magic + uuid.uuid4().bytes + uuid.uuid4().bytes
    sb += b"labfs".ljust(32, b"\0") + struct.pack("<QQHBBI", 8, 1, 8, 0, 1, 0)
    with open(path, "r+b") as fh:
        fh.seek(4096)
        fh.write(sb)


if __name__ == "__main__":
    zfs(sys.argv[1])
    bcachefs(sys.argv[2])
