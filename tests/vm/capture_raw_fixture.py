"""Capture tests/fixtures/host-trace-raw from this machine's own kernel (run as root on the host;
it writes only a 64 MiB file on /dev/shm behind a loop device, which it removes):

    sudo .venv/bin/python tests/vm/capture_raw_fixture.py 3000 tests/fixtures/host-trace-raw

Two tracefs instances trace the loop device's block_rq_issue at once, one read as text
(trace_pipe), one as binary pages (per_cpu/cpuN/trace_pipe_raw), while N direct reads and writes
of 4 to 16 KiB run: the pages, the text, the event's format and the page header are kept, and
the two readings compared (advisor/workload/rawtrace.py)."""

from __future__ import annotations

import mmap
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from advisor.workload import rawtrace  # noqa: E402

T = Path("/sys/kernel/tracing")
LINE = re.compile(r"\s(\d+\.\d+): block_rq_issue: \d+,\d+ (\S+) (?:\d+ \([^)]*\) )?(\d+) \+ (\d+)")


def read_all(path: Path, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    data = b""
    try:
        while True:
            try:
                chunk = os.read(fd, size)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data


def main() -> int:
    n = int(sys.argv[1])
    out = Path(sys.argv[2])
    if not (T / "instances").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(T)], check=True)
    img = "/dev/shm/cw-raw-fixture.img"
    subprocess.run(["dd", "if=/dev/urandom", f"of={img}", "bs=1M", "count=64", "status=none"], check=True)
    loop = subprocess.run(["losetup", "--find", "--show", img], capture_output=True, text=True, check=True).stdout
    loop = loop.strip()
    text_inst, raw_inst = T / "instances/cw-fixture-text", T / "instances/cw-fixture-raw"
    try:
        st = os.stat(loop)
        dev = (os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)
        for inst in (text_inst, raw_inst):
            inst.mkdir()
            (inst / "buffer_size_kb").write_text("4096")
            (inst / "trace_clock").write_text("mono")
            (inst / "events/block/block_rq_issue/filter").write_text(f"dev == {dev}")
            (inst / "events/block/block_rq_issue/enable").write_text("1")
        offsets = np.random.default_rng(1).integers(0, 64 * 256 - 16, n)
        fd = os.open(loop, os.O_RDWR | os.O_DIRECT)
        buf = memoryview(mmap.mmap(-1, 65536))  # page-aligned, as O_DIRECT needs
        for i, o in enumerate(offsets):
            if i % 10 == 3:
                os.pwritev(fd, [buf[:8192]], int(o) * 4096)
            else:
                os.preadv(fd, [buf[: 4096 * (1 + i % 4)]], int(o) * 4096)
        os.close(fd)
        for inst in (text_inst, raw_inst):
            (inst / "events/block/block_rq_issue/enable").write_text("0")
        text = read_all(text_inst / "trace_pipe", 65536)
        fmt = (raw_inst / "events/block/block_rq_issue/format").read_text()
        header = (T / "events/header_page").read_text()
        page = rawtrace.check_page_header(header)
        pages = b"".join(read_all(cpu / "trace_pipe_raw", page) for cpu in sorted((raw_inst / "per_cpu").glob("cpu*")))
    finally:
        for inst in (text_inst, raw_inst):
            if inst.exists():
                inst.rmdir()
        subprocess.run(["losetup", "-d", loop], check=False)
        os.unlink(img)
    events, counts = rawtrace.parse_pages(pages, rawtrace.parse_format(fmt), page)
    events = events[np.argsort(events["ns"], kind="stable")]
    lines = sorted((float(m[1]), "W" in m[2], int(m[3]), int(m[4])) for m in LINE.finditer(text.decode()))
    # Each instance is its own ring buffer: the kernel writes an event into one, then the other,
    # each stamped as it is written, so an interrupt between them parts the two times (18 us for
    # one event of 3,000 once); the requests themselves must all agree.
    apart = [
        abs(t - e["ns"] / 1e9)
        for (t, w, s, c), e in zip(lines, events, strict=False)
        if (w, s, c) == (e["rwbs"] == rawtrace.WRITE, int(e["sector"]), int(e["sectors"]))
    ]
    agree = sum(1 for dt in apart if dt < 1e-4)
    close = sum(1 for dt in apart if dt < 2e-6)
    print(
        f"{len(lines)} lines of text, {len(events)} events in {len(pages) // page} pages ({counts}); "
        f"{agree} agree, {close} of them within 2 us"
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "pages.bin").write_bytes(pages)
    (out / "trace_pipe.txt").write_bytes(text)
    (out / "format").write_text(fmt)
    (out / "header_page").write_text(header)
    (out / "dev").write_text(str(dev))
    return 0 if agree == len(lines) == len(events) else 1


if __name__ == "__main__":
    raise SystemExit(main())
