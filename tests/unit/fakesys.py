"""A sysfs tree and dmsetup outputs for the sampler, built from what the lab captured
(tests/fixtures/lab-readers/): used by tests/unit/test_watch.py and bench/bench_watch.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

READERS = Path(__file__).parents[1] / "fixtures" / "lab-readers"
CACHE_LINE = (READERS / "dmsetup-status-cache-writeback.txt").read_text().strip()
WC_LINE = (READERS / "dmsetup-status-writecache.txt").read_text().strip()


def make_sys(root: Path) -> Path:
    """A sysfs tree: dm-0 (labvg-data, a dm-cache over dm-3 with cache data dm-1, as lvm2 2.03.16
    numbered them in the lab: tests/fixtures/lab-watch/dmsetup-table-cache.txt), dm-6 (a
    writecache), and bcache0 over sdd with its cache sde, with the lab's bcache files."""
    sysfs = root / "sys"
    for name, devnum, dm_name in (("dm-0", "254:0", "labvg-data"), ("dm-1", "254:1", "labvg-data_cache_cpool_cdata"),
                                  ("dm-2", "254:2", "labvg-data_cache_cpool_cmeta"),
                                  ("dm-3", "254:3", "labvg-data_corig"), ("dm-4", "254:4", "labvg-wc_wcorig"),
                                  ("dm-5", "254:5", "labvg-wc_cvol"), ("dm-6", "254:6", "labvg-wc"),
                                  ("sdd", "8:48", None), ("sde", "8:64", None), ("bcache0", "252:0", None)):
        dev = sysfs / "devices" / "virtual" / "block" / name
        (dev / "dm").mkdir(parents=True) if dm_name else dev.mkdir(parents=True)
        if dm_name:
            (dev / "dm" / "name").write_text(dm_name + "\n")
        (dev / "stat").write_text(f"   {len(name)}00 0 800 0 {len(name)}0 0 160 0 0 0 0\n")
        (dev / "size").write_text("655360\n")
        for folder in ("block", "class/block", "dev/block"):
            (sysfs / folder).mkdir(parents=True, exist_ok=True)
        os.symlink(dev, sysfs / "block" / name)
        os.symlink(dev, sysfs / "class" / "block" / name)
        os.symlink(dev, sysfs / "dev" / "block" / devnum)
    files = json.loads((READERS / "bcache-sysfs-writeback.json").read_text())
    bdir = sysfs / "devices" / "virtual" / "block" / "sdd" / "bcache"
    for rel, value in files.items():
        (bdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (bdir / rel).write_text(value + "\n")
    cset = sysfs / "fs" / "bcache" / "8555-set"
    cset.mkdir(parents=True)
    (cset / "cache_available_percent").write_text("91\n")
    cdir = sysfs / "devices" / "virtual" / "block" / "sde" / "bcache"
    cdir.mkdir()
    (cdir / "priority_stats").write_text("Unused:\t\t75%\nClean:\t\t20%\nDirty:\t\t4%\nMetadata:\t1%\n")
    os.symlink(cdir, cset / "cache0")
    os.symlink(cset, bdir / "cache")
    os.symlink(sysfs / "devices" / "virtual" / "block" / "bcache0", bdir / "dev")
    return sysfs


# `dmsetup table` captured in the lab, and a writecache line written from the kernel's
# writecache.rst (<p|s> <origin> <cache> <block size> <#optional args>): not yet captured.
TABLE = (Path(__file__).parents[1] / "fixtures" / "lab-watch" / "dmsetup-table-cache.txt").read_text() + \
    "labvg-wc: 0 524288 writecache s 254:4 254:5 4096 0\n"




def many(root: Path, count: int) -> tuple[Path, str, str]:
    """``count`` dm-caches (vgN/data over dm devices numbered from 100) on top of make_sys's
    tree: the sysfs root, and dmsetup's table and status of every device."""
    sysfs = make_sys(root)
    table, status = [TABLE], [f"labvg-data: {CACHE_LINE}", f"labvg-wc: {WC_LINE}"]
    for i in range(count):
        base = 100 + 3 * i
        names = (f"vg{i}-data_cache_cdata", f"vg{i}-data_corig", f"vg{i}-data")
        for n, dm_name in enumerate(names):
            dev = sysfs / "devices" / "virtual" / "block" / f"dm-{base + n}"
            (dev / "dm").mkdir(parents=True)
            (dev / "dm" / "name").write_text(dm_name + "\n")
            (dev / "stat").write_text("100 0 800 0 10 0 160 0 0 0 0\n")
            os.symlink(dev, sysfs / "block" / dev.name)
            os.symlink(dev, sysfs / "class" / "block" / dev.name)
            os.symlink(dev, sysfs / "dev" / "block" / f"253:{base + n}")
        table.append(f"vg{i}-data: 0 1048576 cache 253:9 253:{base} 253:{base + 1} 128 1 writethrough smq 0\n")
        status.append(f"vg{i}-data: {CACHE_LINE}")
    return sysfs, "".join(table), "\n".join(status) + "\n"
