"""Home servers a storage engineer would recognise, at home sizes (8 TB disks, 500 GB SSDs, a
small Optane, NVMe), each asserting what a recommendation must say: the verdict and its cause,
the backend, bounds on the size and the speed-up, and the safety gate's refusals (issue 26).

Workloads are synthetic traces (numpy, seeded) or the thesis's declared classes; devices are
DeviceFacts as discovery and the probe give them, or built devices put through the real gate."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from advisor.advice.facts import device_facts
from advisor.advice.model import DeviceFacts, Inputs, Recommendation, Versions
from advisor.advice.recommend import recommend
from advisor.disks.devices import Caching, Device, Inventory, LvmInfo, MdInfo
from advisor.units import GiB
from advisor.workload.analysis import Analysis, analyze
from advisor.workload.traces import REQUEST, ImportStats, Trace

TB = 10**12
KERNEL = Versions(kernel="6.1.0-56-amd64", lvm2="2.03.16", bcache_tools="1.0.8-5")
HDD = DeviceFacts("/dev/vg0/data", 8 * TB, "hdd", "probe", 8.0, vg="vg0", is_lv=True, has_data=True, fs_type="ext4")
BLANK_HDD = dataclasses.replace(HDD, path="/dev/sdb", is_lv=False, vg=None, has_data=False, fs_type=None)
SSD = DeviceFacts("/dev/disk/by-id/ata-SSD500", 500 * 10**9, "ssd", "probe", 0.08)
NVME = DeviceFacts("/dev/disk/by-id/nvme-NVME1T", 1000 * 10**9, "nvme", "probe", 0.02)
OPTANE = DeviceFacts("/dev/disk/by-id/nvme-OPTANE32", 32 * 10**9, "nvme", "probe", 0.01)
ARRAY = dataclasses.replace(HDD, redundancy="md raid10 array md0", disks=8)


def trace(offsets: np.ndarray[Any, Any], writes: np.ndarray[Any, Any] | bool = False, length: int = 4096,
          spacing: float = 0.01) -> Analysis:
    n = len(offsets)
    req = np.zeros(n, REQUEST)
    req["offset"], req["length"], req["t"], req["write"] = offsets.astype(np.uint64), length, np.arange(n) * spacing, writes
    return analyze(Trace(req, "fio", "synthetic", ImportStats(lines=n, requests=n)))


def rng() -> np.random.Generator:
    return np.random.default_rng(26)


def zipf_blocks(n: int, items: int, a: float = 1.2) -> np.ndarray[Any, Any]:
    r = rng()
    cdf = np.cumsum(np.arange(1, items + 1, dtype=np.float64) ** -a)
    cdf /= cdf[-1]
    return r.permutation(items)[np.searchsorted(cdf, r.random(n))].astype(np.int64)


# Each trace is analysed once per worker: test_advice_stages, test_smq and test_bcachesim
# recommend from the same analyses (an Analysis is frozen).
@functools.cache
def media_streams() -> Analysis:  # films read start to end in 1 MiB requests
    starts = rng().integers(0, 4000, 40) * (4 << 30)
    offs = np.concatenate([s + np.arange(2000) * (1 << 20) for s in starts])
    return trace(offs, length=1 << 20)


@functools.cache
def backup_once() -> Analysis:  # a nightly backup written once, never read
    return trace(np.arange(150_000) * 65536, writes=True, length=65536)


@functools.cache
def log_appends() -> Analysis:  # appends to a few log files, 4 KiB at a time
    r = rng()
    files = r.integers(0, 8, 150_000)
    pos = np.zeros(8, np.int64)
    offs = np.empty(150_000, np.int64)
    for i, f in enumerate(files):
        offs[i] = f * (1 << 34) + pos[f] * 4096
        pos[f] += 1
    return trace(offs, writes=True)


@functools.cache
def hot_with_scan() -> Analysis:  # a Zipf hot set, and a nightly scan read straight through beside it
    hot = zipf_blocks(120_000, 200_000) * 4096
    scan = (1 << 40) + np.arange(60_000) * (1 << 20)
    offs = np.concatenate([hot[:60_000], scan, hot[60_000:]])
    lengths = np.concatenate([np.full(60_000, 4096), np.full(60_000, 1 << 20), np.full(60_000, 4096)])
    n = len(offs)
    req = np.zeros(n, REQUEST)
    req["offset"], req["length"], req["t"] = offs.astype(np.uint64), lengths, np.arange(n) * 0.01
    return analyze(Trace(req, "fio", "synthetic", ImportStats(lines=n, requests=n)))


@functools.cache
def write_hot_read_cold() -> Analysis:
    r = rng()
    n = 200_000
    write = r.random(n) < 0.7
    off = np.where(write, r.integers(0, 1000, n), 1000 + r.integers(0, 1_000_000, n))
    return trace(off * 4096, writes=write)


@functools.cache
def first_touches() -> Analysis:  # a short recording: most blocks seen once or twice, far apart
    return trace(rng().integers(0, 20_000, 40_000) * 16 * 4096)


@functools.cache
def hot_larger_than_ssd() -> Analysis:  # 160 MB read evenly in rounds, for a 40 MB SSD
    r = rng()
    return trace(np.concatenate([r.permutation(40_000) for _ in range(6)]) * 65536)


@functools.cache
def vm_host() -> Analysis:  # VMs' random I/O, a Zipf hot set, a third writes
    r = rng()
    return trace(zipf_blocks(200_000, 500_000) * 4096, writes=r.random(200_000) < 0.33)


@functools.cache
def moving_hot_set() -> Analysis:  # the morning's hot set, then the afternoon's
    a = zipf_blocks(100_000, 100_000)
    return trace(np.concatenate([a, a + 1_000_000]) * 4096)


# --- devices through the real gate ------------------------------------------------------------


def gated(dev: Device, *others: Device, part: str = "slow") -> DeviceFacts:
    inv = Inventory("t", "home", "running", True, (dev, *others), memory_bytes=16 * GiB)
    f = device_facts(inv, dev, lambda d: None, part=part)  # type: ignore[arg-type]
    return dataclasses.replace(f, device_class="hdd", class_source="probe", latency_ms=8.0)


def lv(name: str, segtype: str = "linear", **kw: Any) -> Device:
    return Device("dm-1", "lvm", "/dev/dm-1", "254:1", f"dm-uuid:LVM-{name}", f"/dev/vg0/{name}",
                  size_bytes=8 * TB, lvm=LvmInfo("lv", "vg0", name, segtype, **kw), fs_type="ext4", state="in-use")


ZFS = Device("sdb1", "partition", "/dev/sdb1", "8:17", "serial:z/part1", "/dev/disk/by-id/ata-HDD8T-part1",
             size_bytes=8 * TB, fs_type="zfs_member", fs_label="tank", state="has-data",
             caching=Caching("zfs", "member of ZFS pool tank", "pool member",
                             "a block cache does not apply: ZFS caches in its own layers. Add the SSD to the pool as "
                             "L2ARC (zpool add tank cache SSD)"))
BCACHEFS = Device("sdc", "disk", "/dev/sdc", "8:32", "serial:f", "/dev/disk/by-id/ata-HDD8T2", size_bytes=8 * TB,
                  state="has-data", caching=Caching("bcachefs", "bcachefs member", "file system member",
                                                    "a block cache does not apply: bcachefs tiers across SSDs and HDDs "
                                                    "itself (bcachefs device add)"))
MD5 = Device("md0", "md", "/dev/md0", "9:0", "md-uuid:5", "/dev/md/0", size_bytes=24 * TB, fs_type="ext4",
             md=MdInfo("array", "md0", "raid5"), state="in-use", mountpoints=("/srv",))
CACHED_LV = lv("vault", "cache", attr="Cwi-aoC---")
LUKS_ON_CACHE = Device("dm-2", "dm", "/dev/dm-2", "254:2", "dm-uuid:CRYPT-LUKS2-x", "/dev/mapper/vault",
                       slaves=("dm-1",), size_bytes=8 * TB, fs_type="ext4", state="in-use")


@dataclass
class Scenario:
    name: str
    slow: Callable[[], DeviceFacts]
    fast: tuple[DeviceFacts, ...] = (SSD,)
    analysis: Callable[[], Analysis | None] = lambda: None
    declared: dict[str, Any] = field(default_factory=dict)
    verdict: str = "cache"
    cause: str = ""
    backends: tuple[str, ...] = ()  # the chosen backend is one of these (empty: no config)
    size: tuple[float, float] = (0, float("inf"))  # bytes of SSD the cache is given
    speedup: tuple[float, float] = (0, float("inf"))
    says: str = ""  # words the summary or a reason must hold
    check: Callable[[Recommendation], object] = lambda r: True


def cached_lv_luks() -> DeviceFacts:
    crypt = dataclasses.replace(LUKS_ON_CACHE)
    return gated(crypt, dataclasses.replace(CACHED_LV, holders=("dm-2",)))


SCENARIOS = [
    Scenario("media-server-streams", lambda: HDD, analysis=media_streams, verdict="dont-cache", cause="sequential",
             says="sequential"),
    Scenario("vm-host", lambda: HDD, analysis=vm_host, backends=("lvmcache",), size=(256 << 20, 500 * 10**9),
             speedup=(1.1, 50), check=lambda r: r.config and r.config.predicted_write_hit_ratio is not None),
    Scenario("nextcloud-mixed-files", lambda: HDD, declared={"workload": "mixed-files"}, backends=("lvmcache",),
             size=(256 << 20, 500 * 10**9), speedup=(1.1, 20)),
    Scenario("backup-target-written-once", lambda: HDD, analysis=backup_once, verdict="dont-cache",
             cause="sequential"),
    Scenario("database-larger-than-the-ssd", lambda: HDD, declared={"workload": "database", "hot_fraction": 0.2},
             backends=("lvmcache",), size=(100 * GiB, 500 * 10**9), speedup=(1.1, 50),
             check=lambda r: r.config and r.config.bounded_by_ssd and any("L-SIZE-2" in w.findings for w in r.warnings)),
    Scenario("seedbox-no-hot-spots", lambda: HDD, declared={"hot_fraction": 0.9}, fast=(dataclasses.replace(
        SSD, size_bytes=64 * 10**9),), verdict="dont-cache", cause="no-hot-spots"),
    Scenario("nightly-scan-beside-a-hot-set", lambda: HDD, analysis=hot_with_scan, backends=("lvmcache",),
             speedup=(1.1, 50), check=lambda r: r.config and "streams the cache lets through" in r.config.speedup_basis),
    Scenario("working-set-that-moves", lambda: HDD, analysis=moving_hot_set, backends=("lvmcache",),
             speedup=(1.1, 100)),
    Scenario("log-server-appends", lambda: HDD, analysis=log_appends, verdict="dont-cache", cause="sequential"),
    Scenario("small-optane-before-16-tb", lambda: dataclasses.replace(HDD, size_bytes=16 * TB),
             fast=(OPTANE,), declared={"workload": "database"}, backends=("lvmcache",), size=(1 * GiB, 32 * 10**9),
             speedup=(1.1, 100), check=lambda r: r.config and r.config.bounded_by_ssd),
    Scenario("flash-in-front-of-flash", lambda: dataclasses.replace(HDD, device_class="ssd", latency_ms=0.08),
             fast=(NVME,), declared={"workload": "database"}, verdict="dont-cache", cause="already-flash"),
    Scenario("md-raid5-without-lvm", lambda: gated(MD5), declared={"workload": "database"}, verdict="dont-cache",
             cause="blocked", says="into LVM"),
    Scenario("md-raid5-reformat-allowed", lambda: gated(MD5), declared={"workload": "database", "reformat_ok": True},
             backends=("bcache",), speedup=(1.1, 100)),
    Scenario("proxmox-thin-lv", lambda: gated(lv("vm-100-disk-0", "thin", pool="data")),
             declared={"workload": "database"}, verdict="dont-cache", cause="gate", says="vg0/data"),
    Scenario("zfs-pool-member", lambda: gated(ZFS), declared={"workload": "database"}, verdict="dont-cache",
             cause="gate", says="L2ARC"),
    Scenario("bcachefs-member", lambda: gated(BCACHEFS), declared={"workload": "database"}, verdict="dont-cache",
             cause="gate", says="bcachefs device add"),
    Scenario("luks-on-a-cached-lv", cached_lv_luks, declared={"workload": "database"}, verdict="dont-cache",
             cause="gate", says="cache already"),
    # Its writes hit their small hot set, its reads almost never: writethrough gains nothing, and
    # writeback (which would absorb the writes) needs its risk accepted.
    Scenario("write-hot-read-cold-database", lambda: HDD, analysis=write_hot_read_cold, verdict="dont-cache",
             cause="gains-too-little", says="writeback needs", check=lambda r: all(
                 (c.predicted_hit_ratio or 0) < 0.35 for c in (r.config, *(o.config for o in r.runner_ups)) if c)),
    Scenario("short-recording", lambda: HDD, analysis=first_touches, verdict="cant-judge", cause="first-touches",
             check=lambda r: r.uncertain and r.uncertain.speedup[0] < r.uncertain.speedup[1]),
    Scenario("hot-set-larger-than-the-ssd", lambda: HDD, analysis=hot_larger_than_ssd,
             fast=(dataclasses.replace(SSD, size_bytes=40 << 20),), verdict="dont-cache", cause="ssd-too-small",
             says="or more would hold it"),
    Scenario("data-fits-on-the-ssd", lambda: HDD, declared={"workload": "database", "data_bytes": 200 * 10**9},
             verdict="move-to-ssd", cause="fits-on-ssd"),
    Scenario("database-on-a-thesis-like-array", lambda: ARRAY, fast=(dataclasses.replace(
        SSD, redundancy="md raid1 array md127"),), declared={"workload": "database", "filesystem": "xfs",
                                                               "reformat_ok": True},
             backends=("bcache",), speedup=(5, 21), check=lambda r: r.config and "array like this one" in
             r.config.speedup_basis),  # the thesis's 21x, for the share of the hot data 500 GB holds
    Scenario("database-on-one-disk", lambda: HDD, fast=(dataclasses.replace(SSD, redundancy="md raid1 array md127"),),
             declared={"workload": "database", "filesystem": "xfs", "reformat_ok": True}, backends=("bcache",),
             speedup=(1.1, 20.9), check=lambda r: r.config and r.config.speedup_basis.startswith("latency model")),
    Scenario("hdd-as-the-fast-device", lambda: HDD, fast=(dataclasses.replace(SSD, device_class="hdd",
                                                                               latency_ms=6.0),),
             declared={"workload": "database"}, verdict="dont-cache", cause="fast-not-fast"),
    Scenario("fresh-disks-for-a-new-cache", lambda: BLANK_HDD, declared={"workload": "database"},
             backends=("bcache",), speedup=(1.1, 100)),
    Scenario("unprobed-devices", lambda: dataclasses.replace(HDD, class_source="kernel flag", latency_ms=None),
             fast=(dataclasses.replace(SSD, class_source="kernel flag", latency_ms=None),),
             declared={"workload": "database"}, backends=("lvmcache",),
             check=lambda r: sum("was not probed" in w.text for w in r.warnings) == 2),
]


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_home_server(s: Scenario) -> None:
    r = recommend(Inputs(slow=s.slow(), fast=s.fast, analysis=s.analysis(), versions=KERNEL, memory_bytes=16 * GiB,
                         **s.declared))
    text = " ".join([r.summary, *(x.text for x in r.reasons), *(w.text for w in r.warnings)])
    print(s.name, r.verdict, r.cause, r.summary, r.config and (r.config.backend, r.config.size_bytes,
                                                               r.config.expected_speedup, r.config.speedup_basis))
    assert (r.verdict, r.cause) == (s.verdict, s.cause), text
    if s.backends:
        assert r.config is not None and r.config.backend in s.backends
        assert s.size[0] <= r.config.fast_space_bytes <= s.size[1] and r.config.fast_space_bytes <= min(
            f.size_bytes for f in s.fast)
        assert s.speedup[0] <= (r.config.expected_speedup or 0) <= s.speedup[1]
    elif s.verdict != "cache":
        assert r.config is None
    assert s.says in text
    assert s.check(r)
    assert r.reasons and all(x.findings for x in r.reasons), "every reason cites its source"
    assert all(o.config is None or o.config.backend != "bcache" or not any(
        g["code"] == "bcache-needs-block" for g in r.gate) for o in r.runner_ups), "nothing offered the gate refuses"


def test_there_are_twenty_five_scenarios_or_more() -> None:
    assert len(SCENARIOS) >= 25 and len({s.name for s in SCENARIOS}) == len(SCENARIOS)
