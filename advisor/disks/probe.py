"""Short, read-only fio probes that measure what a disk is, whatever the kernel says.

One fio process per device with three jobs run one after another (``stonewall``): random
4 KiB reads at queue depth 1 (latency percentiles), random 4 KiB reads at queue depth 32
(IOPS), and sequential 1 MiB reads spread over the whole device in strided zones (MB/s).
fio runs with ``--readonly`` (it refuses to issue a single write), O_DIRECT and libaio
(findings C-DEV-2, C-DEV-3). Classification rests on the measured latency, not the kernel's
rotational flag, which USB bridges and RAID controllers often get wrong.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import random
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from advisor.disks.devices import Device
from advisor.errors import Described, codes, next_step
from advisor.runner import CommandError, CommandFailed, CommandRunner, TimedOut
from advisor.units import latency

ProbeClass = Literal["hdd", "ssd", "nvme", "unknown"]

# Median 4 KiB random-read latency at queue depth 1. A 7200 rpm disk needs about 4 ms
# (T-DEV-1: 4.16 ms), a 15k disk about 2 ms; SATA flash answers in well under 0.2 ms on
# real hardware; through emulated controllers it took 0.4 to 1.07 ms (the same lab disks, two
# runs on the same machine), which the parallelism rule below catches.
HDD_MIN_P50_MS = 1.5
SSD_MAX_P50_MS = 1.0
# Between the two, latency alone cannot tell; parallelism can. Flash serves many requests at
# once, so queue depth 32 gives several times the random-read IOPS of depth 1; one seeking
# actuator gains at most about 2x from reordering (NCQ). Seen under emulation: flash at 1.07 ms
# with 3.8 to 5.2x, the 150-IOPS disk at 5.9 ms with 1.0x.
FLASH_PARALLEL_GAIN = 3.0
# Beyond what a SATA link carries (6 Gb/s is about 550 MB/s of data).
SATA_MAX_MBPS = 600.0
SERIAL_LINKS = ("sata", "sas", "scsi", "usb", "iscsi", "mmc")

ZERO_SAMPLES = 32


@dataclass(frozen=True)
class Phase:
    name: str
    description: str
    share: float  # of the probe's time budget
    options: tuple[str, ...]


PHASES: tuple[Phase, ...] = (
    Phase(
        "randread-qd1",
        "random 4 KiB reads, queue depth 1",
        0.4,
        ("--rw=randread", "--bs=4k", "--iodepth=1", "--norandommap", "--randrepeat=0"),
    ),
    Phase(
        "randread-qd32",
        "random 4 KiB reads, queue depth 32",
        0.3,
        ("--rw=randread", "--bs=4k", "--iodepth=32", "--norandommap", "--randrepeat=0"),
    ),
    Phase(
        "seqread-1m", "sequential 1 MiB reads in zones across the disk", 0.3, ("--rw=read", "--bs=1M", "--iodepth=8")
    ),
)
DEFAULT_SECONDS = 4.5  # of fio run time; with fio start-up a probe stays under 8 s even on a slow HDD


codes({"probe-failed": "{why}"})


class ProbeError(Described):
    """The probe could not start or run; the message says why and that nothing changed."""

    CODE = "probe-failed"


@dataclass(frozen=True)
class ProbeProgress:
    device: str
    phase: str
    description: str
    elapsed: float
    total: float
    iops: float


@dataclass(frozen=True)
class PhaseResult:
    name: str
    ios: int
    iops: float
    mbps: float
    lat_p50_ms: float | None
    lat_p90_ms: float | None
    lat_p99_ms: float | None
    runtime_ms: int


@dataclass(frozen=True)
class Classification:
    device_class: ProbeClass
    confidence: Literal["high", "medium", "low"]
    reason: str
    disagreements: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeResult:
    device: str
    devnode: str
    identity: str | None
    size_bytes: int
    kernel_rotational: bool | None
    transport: str | None
    phases: tuple[PhaseResult, ...]
    classification: Classification
    zero_reads: bool
    complete: bool
    seconds: float
    fio_version: str
    notes: tuple[str, ...] = ()
    fio_json: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def phase(self, name: str) -> PhaseResult | None:
        return next((p for p in self.phases if p.name == name), None)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeResult:
        fields = dict(data)
        fields["phases"] = tuple(PhaseResult(**p) for p in data["phases"])
        c = data["classification"]
        fields["classification"] = Classification(
            c["device_class"], c["confidence"], c["reason"], tuple(c.get("disagreements", ()))
        )
        fields["notes"] = tuple(data.get("notes", ()))
        fields.setdefault("fio_json", {})
        return cls(**fields)

    def to_json(self, with_fio: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not with_fio:
            data.pop("fio_json")
        return data


def fio_argv(devnode: str, size_bytes: int, seconds: float, output: str) -> list[str]:
    """The fio command line for one device: three stonewalled, read-only jobs."""
    argv = ["fio", "--readonly", f"--output={output}", "--output-format=json"]
    zone_range = max(size_bytes // 16 // (1 << 20), 16) << 20
    for i, phase in enumerate(PHASES):
        runtime = max(1, round(seconds * phase.share * 1000))
        argv += [
            f"--name={phase.name}",
            f"--filename={devnode}",
            "--direct=1",
            "--ioengine=libaio",
            "--time_based",
            f"--runtime={runtime}ms",
            "--invalidate=0",
            *phase.options,
        ]
        if phase.name.startswith("seq"):
            # Read 16 MiB at the start of every 1/16 of the disk, not just its first GiB.
            argv += ["--zonemode=strided", f"--zonerange={zone_range}", "--zonesize=16M"]
        if i:
            argv.append("--stonewall")
    return argv


def parse_fio(data: dict[str, Any]) -> list[PhaseResult]:
    results = []
    for job in data.get("jobs", []):
        read = job.get("read", {})
        pct = read.get("clat_ns", {}).get("percentile", {})

        def ms(key: str, pct: dict[str, Any] = pct) -> float | None:
            value = pct.get(key)
            return round(value / 1e6, 4) if value is not None else None

        results.append(
            PhaseResult(
                name=str(job.get("jobname")),
                ios=int(read.get("total_ios", 0)),
                iops=round(float(read.get("iops", 0.0)), 1),
                mbps=round(float(read.get("bw_bytes", 0)) / 1e6, 2),
                lat_p50_ms=ms("50.000000"),
                lat_p90_ms=ms("90.000000"),
                lat_p99_ms=ms("99.000000"),
                runtime_ms=int(read.get("runtime", 0)),
            )
        )
    return results


def classify(
    phases: list[PhaseResult] | tuple[PhaseResult, ...],
    rotational: bool | None,
    transport: str | None,
    zero_reads: bool = False,
) -> Classification:
    """Decide HDD, SSD or NVMe from measured latency; explain and flag disagreements."""
    qd1 = next((p for p in phases if p.name == "randread-qd1" and p.ios > 0 and p.lat_p50_ms is not None), None)
    if qd1 is None or qd1.lat_p50_ms is None:
        return Classification("unknown", "low", "no random reads completed, so there is nothing to judge by")
    p50 = qd1.lat_p50_ms
    seq = next((p for p in phases if p.name == "seqread-1m"), None)
    qd32 = next((p for p in phases if p.name == "randread-qd32"), None)
    disagreements: list[str] = []
    if p50 >= HDD_MIN_P50_MS:
        cls: ProbeClass = "hdd"
        confidence: Literal["high", "medium", "low"] = "high" if p50 >= 2 * HDD_MIN_P50_MS else "medium"
        reason = f"random 4 KiB reads take {p50:.1f} ms at the median: seek-bound, a hard disk"
        if qd1.ios < 20:
            confidence = "medium"
    elif p50 <= SSD_MAX_P50_MS or _parallel_gain(qd1, qd32) >= FLASH_PARALLEL_GAIN:
        # Latency tells flash from a seeking disk; the link tells NVMe from SATA/SAS. The kernel
        # knows its driver for certain, so a known SATA, SAS, SCSI or USB link settles it (an
        # NVMe drive in a USB enclosure performs like a SATA SSD); only on links that say nothing
        # (virtio, unknown) does a bandwidth beyond what SATA carries mark NVMe-class flash.
        fast_link = seq is not None and seq.mbps > SATA_MAX_MBPS
        if transport == "nvme" or (transport not in SERIAL_LINKS and fast_link):
            cls = "nvme"
            why = (
                "on an NVMe controller"
                if transport == "nvme"
                else f"reading {seq.mbps:.0f} MB/s, beyond a SATA link"
                if seq
                else ""
            )
            reason = f"random 4 KiB reads take {latency(p50)} at the median, no seeking: flash, {why}"
        else:
            cls = "ssd"
            link = f" on a {transport.upper()} link" if transport in SERIAL_LINKS else ""
            reason = f"random 4 KiB reads take {latency(p50)} at the median, no seeking: a solid-state disk{link}"
        confidence = "high" if p50 <= SSD_MAX_P50_MS / 2 else "medium"
        if qd32 is not None and qd32.iops:
            reason += f"; {qd32.iops:,.0f} IOPS at queue depth 32"
        if p50 > SSD_MAX_P50_MS:
            confidence = "low"
            reason += (
                f", {_parallel_gain(qd1, qd32):.1f}x depth 1, as only flash does; slower than flash usually "
                "answers (a USB bridge, a busy or virtual controller?)"
            )
    else:
        return Classification(
            "unknown",
            "low",
            f"random 4 KiB reads take {latency(p50)} at the median: too slow for flash, too fast for a seeking disk "
            "(a hybrid drive, a RAID controller's cache, or a network disk?)",
        )
    if rotational is True and cls in ("ssd", "nvme"):
        disagreements.append(
            "the kernel reports rotational, but it answers like an SSD; USB bridges and RAID controllers often "
            "report this wrongly"
        )
    if rotational is False and cls == "hdd":
        disagreements.append(
            "the kernel reports non-rotational, but it answers like a hard disk; virtual disks, RAID controllers "
            "and some bridges report this wrongly"
        )
    if transport == "nvme" and cls == "hdd":
        disagreements.append("it sits on an NVMe controller, but it answers like a hard disk")
    if zero_reads:
        confidence = "low" if confidence != "high" else "medium"
    return Classification(cls, confidence, reason, tuple(disagreements))


def _parallel_gain(qd1: PhaseResult, qd32: PhaseResult | None) -> float:
    """Random-read IOPS at queue depth 32 over depth 1 (0 when either is missing)."""
    if qd32 is None or not qd32.ios or not qd1.iops:
        return 0.0
    return qd32.iops / qd1.iops


def sample_zero_reads(devnode: str, size_bytes: int, samples: int = ZERO_SAMPLES, seed: int = 0) -> bool:
    """True if every sampled 4 KiB block reads back as zeros (C-DEV-1): never-written or thin
    regions that a virtual or thin device answers without touching media."""
    if size_bytes < 4096:
        return False
    rng = random.Random(seed)
    blocks = size_bytes // 4096
    fd = os.open(devnode, os.O_RDONLY)
    try:
        for _ in range(samples):
            if any(os.pread(fd, 4096, rng.randrange(blocks) * 4096)):
                return False
    finally:
        os.close(fd)
    return True


def check_target(path: str) -> str:
    """The device node to probe, or a ProbeError that says what is wrong with ``path``."""
    if not os.path.exists(path):
        raise ProbeError(f"{path} does not exist; nothing was probed", next=[next_step("see-devices")])
    mode = os.stat(path).st_mode
    if not stat.S_ISBLK(mode):
        raise ProbeError(
            f"{path} is not a block device; nothing was probed",
            next=[next_step("name-disk"), next_step("see-devices")],
        )
    real = os.path.realpath(path)
    if not os.access(real, os.R_OK):
        raise ProbeError(
            f"reading {real} needs root (it is readable only by {_owner(real)}); nothing was probed",
            next=[next_step("become-root")],
        )
    return real


def _owner(path: str) -> str:

    st = os.stat(path)
    try:
        return f"{pwd.getpwuid(st.st_uid).pw_name}:{grp.getgrgid(st.st_gid).gr_name}"
    except KeyError:
        return f"uid {st.st_uid}"


def _reads_completed(name: str) -> int | None:
    try:
        return int(Path(f"/sys/class/block/{name}/stat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


_FIO_VERSIONS: dict[str, str] = {}


def fio_version(runner: CommandRunner) -> str:
    path = runner.which("fio") or "fio"
    if path not in _FIO_VERSIONS:
        _FIO_VERSIONS[path] = runner.run([path, "--version"], timeout=10).stdout.strip()
    return _FIO_VERSIONS[path]


def probe_device(
    device: Device,
    runner: CommandRunner,
    seconds: float = DEFAULT_SECONDS,
    on_progress: Callable[[ProbeProgress], None] | None = None,
) -> ProbeResult:
    """Probe one device read-only. Raises ProbeError before anything runs when it cannot."""
    devnode = check_target(device.devnode)
    version = fio_version(runner)
    started = time.monotonic()
    zero = sample_zero_reads(devnode, device.size_bytes)
    with tempfile.TemporaryDirectory(prefix="cachewise-probe-") as tmp:
        output = os.path.join(tmp, "fio.json")
        argv = fio_argv(devnode, device.size_bytes, seconds, output)
        proc = runner.start(argv, timeout=seconds * 3 + 30)
        last_reads, last_t = _reads_completed(device.name), time.monotonic()
        iops = 0.0
        budget = [seconds * p.share for p in PHASES]
        try:
            while proc.running():
                time.sleep(0.25)
                now = time.monotonic()
                reads = _reads_completed(device.name)
                if reads is not None and last_reads is not None and now > last_t:
                    iops = (reads - last_reads) / (now - last_t)
                last_reads, last_t = reads, now
                if on_progress is not None:
                    elapsed = proc.elapsed
                    index, acc = 0, 0.0
                    while index < len(PHASES) - 1 and elapsed > acc + budget[index]:
                        acc += budget[index]
                        index += 1
                    phase = PHASES[index]
                    on_progress(ProbeProgress(device.name, phase.name, phase.description, elapsed, seconds, iops))
        except BaseException:  # interrupted (Ctrl-C, SIGTERM): fio must not go on reading
            proc.kill()
            raise
        notes: list[str] = []
        failure: CommandError | None = None
        try:
            proc.wait(check=True)
        except (CommandFailed, TimedOut) as exc:
            failure = exc
        data: dict[str, Any] = {}
        try:
            data = json.loads(Path(output).read_text())
        except (OSError, ValueError):
            data = {}
    phases = [p for p in parse_fio(data) if p.ios > 0]
    complete = failure is None and len(phases) == len(PHASES)
    if failure is not None:
        gone = not os.path.exists(f"/sys/class/block/{device.name}")
        what = "the device disappeared during the probe" if gone else f"fio failed: {failure}"
        measured = ", ".join(p.name for p in phases) or "nothing"
        notes.append(f"{what}; measured before that: {measured}.")
        if not phases:
            raise ProbeError(f"probing {device.name}: {what}; nothing was measured and nothing was changed.")
    if zero:
        notes.append(
            f"all {ZERO_SAMPLES} sampled 4 KiB blocks read back as zeros: never-written or thin-provisioned "
            "regions can answer without touching the media, so these figures may be optimistic (C-DEV-1)."
        )
    classification = classify(phases, device.rotational, device.transport, zero)
    return ProbeResult(
        device=device.name,
        devnode=devnode,
        identity=device.identity,
        size_bytes=device.size_bytes,
        kernel_rotational=device.rotational,
        transport=device.transport,
        phases=tuple(phases),
        classification=classification,
        zero_reads=zero,
        complete=complete,
        seconds=round(time.monotonic() - started, 2),
        fio_version=version,
        notes=tuple(notes),
        fio_json=data,
    )
