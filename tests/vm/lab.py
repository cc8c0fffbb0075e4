"""The storage lab: boot the real Debian kernel under qemu (TCG) with emulated disks.

Facts behind the choices are in ../shared/LAB.md and docs/lab.md: KVM hangs here, so the
guest runs under software emulation; the host's root file system is the guest's (read-only,
via virtme-ng), so cachewise and its virtualenv run in the guest unchanged; everything the
guest produces is written under the shared work directory and read after it exits.
"""

from __future__ import annotations

import compileall
import functools
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

GUEST_DIR = Path(__file__).parent / "guest"
REPO = Path(__file__).resolve().parents[2]
PACKAGES_FILE = REPO / "packaging" / "lab-packages.txt"


@dataclass(frozen=True)
class LabDisk:
    """One emulated disk. ``bus`` is scsi (virtio-scsi), sata (AHCI) or nvme."""

    name: str
    serial: str
    size: str = "1G"
    bus: str = "scsi"
    rotation_rate: int | None = None
    iops_limit: int | None = None
    wwn: str | None = None
    model: str | None = None
    bps_limit: int | None = None  # bytes per second, reads and writes together (qemu throttling)


# The lab's standard disks (shared/LAB.md): a 150-IOPS rotational HDD, a SATA SSD, an NVMe.
HDD = LabDisk("hdd", "HDD0001", "2G", "scsi", rotation_rate=7200, iops_limit=150, wwn="0x5000c500a1b2c3d4")
SATA_SSD = LabDisk("ssd", "SSD0001", "1G", "sata", rotation_rate=1, model="LabSSD")
NVME = LabDisk("nvme", "NVME0001", "1G", "nvme")


def soak() -> bool:
    """The long run: every step of every crash test, the Ansible playbook twice
    (`CACHEWISE_SOAK=1 pytest -m lab tests/lab`, the README's soak command)."""
    return os.environ.get("CACHEWISE_SOAK") == "1"


VIRTIOFSD_SCRIPT = REPO / "packaging" / "lab-virtiofsd.sh"


@functools.cache
def virtiofsd_dir() -> str | None:
    """Where the Rust virtiofsd is (packaging/lab-virtiofsd.sh builds it once): with it on the
    PATH virtme-ng gives the guest the host's root over virtio-fs instead of 9p, which halves
    the lab's time under emulation (docs/lab.md). None: the guest uses 9p."""
    proc = subprocess.run(["bash", str(VIRTIOFSD_SCRIPT)], capture_output=True, text=True, check=False)
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    found = proc.stdout.strip()
    return found if found and Path(found, "virtiofsd").exists() else None


def compile_sources() -> None:
    """Write the project's bytecode before a boot. The guest's root is read-only and this
    machine's environment sets PYTHONDONTWRITEBYTECODE, so without .pyc files every
    `cachewise` call in the guest compiled its modules from source again (about 3 s of a 22 s
    `plan` under 9p, measured in the guest)."""
    for package in ("advisor", "cachewise", "recipes", "screens", "tests"):
        compileall.compile_dir(REPO / package, quiet=2)


def find_kernel() -> str | None:
    kernels = sorted(glob.glob("/boot/vmlinuz-*-amd64"))
    return kernels[-1] if kernels else None


def vng_path() -> str | None:
    found = shutil.which("vng")
    if found:
        return found
    candidate = Path(sys.executable).parent / "vng"
    return str(candidate) if candidate.exists() else None


def missing_prerequisites() -> list[str]:
    """What the lab needs that this machine lacks, as sentences."""
    missing = []
    if vng_path() is None:
        missing.append("virtme-ng (pip install 'cachewise[lab]')")
    if shutil.which("qemu-system-x86_64") is None:
        missing.append("qemu-system-x86 (Debian package)")
    if find_kernel() is None:
        missing.append("linux-image-amd64 (Debian package; a kernel in /boot with dm-cache and bcache modules)")
    if not (Path("/bin/busybox").exists() or Path("/usr/bin/busybox").exists()):
        missing.append("busybox-static (Debian package; virtme-ng's init needs it)")
    for tool in ("lvm", "make-bcache", "sfdisk", "mkfs.ext4", "fio"):
        if shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
            missing.append(f"{tool} (see packaging/lab-packages.txt)")
    return missing


@dataclass
class GuestRun:
    returncode: int
    seconds: float
    out: Path
    console: str
    prepared: dict[str, Any] = field(default_factory=dict)  # what the scenario's prepare() returned

    def read(self, name: str) -> str:
        return (self.out / name).read_text()

    def log_tail(self, chars: int = 6000) -> str:
        logs = sorted(self.out.glob("scenario*.log"), key=lambda p: p.stat().st_mtime)  # the last boot's
        return logs[-1].read_text()[-chars:] if logs else self.console[-chars:]


@dataclass
class Lab:
    disks: list[LabDisk]
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="cachewise-lab-")))
    memory: str = "2G"
    cpus: int = 2

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "out").mkdir(exist_ok=True)

    def image(self, disk: LabDisk) -> Path:
        return self.workdir / f"{disk.name}.img"

    def create_images(self) -> None:
        for disk in self.disks:
            path = self.image(disk)
            if not path.exists():
                subprocess.run(["truncate", "-s", disk.size, str(path)], check=True)

    def qemu_opts(self) -> list[str]:
        opts = ["-device", "virtio-scsi-pci,id=scsi1"]
        if any(d.bus == "sata" for d in self.disks):
            opts += ["-device", "ahci,id=ahci"]
        sata_port = 0
        for disk in self.disks:
            drive = f"file={self.image(disk)},if=none,id={disk.name},format=raw,cache=none,aio=threads"
            if disk.iops_limit:
                drive += f",throttling.iops-total={disk.iops_limit}"
            if disk.bps_limit:
                drive += f",throttling.bps-total={disk.bps_limit}"
            opts += ["-drive", drive]
            props = [f"drive={disk.name}", f"serial={disk.serial}"]
            if disk.rotation_rate is not None and disk.bus != "nvme":
                props.append(f"rotation_rate={disk.rotation_rate}")
            if disk.wwn and disk.bus != "nvme":
                props.append(f"wwn={disk.wwn}")
            if disk.model and disk.bus == "sata":
                props.append(f"model={disk.model}")
            if disk.bus == "scsi":
                opts += ["-device", ",".join(["scsi-hd", "bus=scsi1.0", *props])]
            elif disk.bus == "sata":
                opts += ["-device", ",".join(["ide-hd", f"bus=ahci.{sata_port}", *props])]
                sata_port += 1
            elif disk.bus == "nvme":
                opts += ["-device", ",".join(["nvme", *props])]
            else:
                raise ValueError(f"unknown bus {disk.bus}")
        return opts

    def run_boots(self, scripts: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> GuestRun:
        """Boot the guest once per script, on the same disk images, as a machine reboots: boot N
        runs ``scripts[N-1]`` with LAB_BOOT=N and logs to scenario.log (the first boot) or
        scenario-N.log. A boot that ends in a power cut (``power_cut`` in common.sh writes
        $LAB_OUT/cut-N, then the sysrq reboot makes qemu exit) has no exit code; the next boot
        follows. The run stops at the first boot that failed."""
        total = 0.0
        consoles = []
        run = GuestRun(255, 0.0, self.workdir / "out", "")
        for n, script in enumerate(scripts, start=1):
            log = "scenario.log" if n == 1 else f"scenario-{n}.log"
            run = self.run(script, env={**(env or {}), "LAB_BOOT": str(n), "LAB_LOG": log}, timeout=timeout)
            total += run.seconds
            consoles.append(run.console)
            (self.workdir / f"console-{n}.log").write_text(run.console)
            cut = (self.workdir / "out" / f"cut-{n}").exists()
            if cut and run.returncode == 255 and n < len(scripts):
                continue  # the power was cut, as the script meant: boot again
            if run.returncode != 0 or n == len(scripts):
                break
        return GuestRun(run.returncode, total, run.out, "\n".join(consoles))

    def run(self, script: str, env: dict[str, str] | None = None, timeout: float = 600) -> GuestRun:
        """Boot the guest, run ``script`` (a file in tests/vm/guest) as root, return its outputs."""
        if _CLOSED:
            raise RuntimeError("the test session is over: no guest is started")
        kernel = find_kernel()
        vng = vng_path()
        if kernel is None or vng is None:
            raise RuntimeError("lab prerequisites missing: " + "; ".join(missing_prerequisites()))
        self.create_images()
        compile_sources()
        guest_env = {
            "LAB_OUT": str(self.workdir / "out"),
            "LAB_WORK": str(self.workdir),
            "LAB_GUEST": str(GUEST_DIR),
            "CW_PY": sys.executable,
            "CW_REPO": str(REPO),
            # The product the guest runs is this tree's, whichever tree the interpreter was installed from.
            "PYTHONPATH": str(REPO),
            "PYTHONDONTWRITEBYTECODE": "1",
            "LAB_SOAK": "1" if soak() else "0",
            **(env or {}),
        }
        (self.workdir / "out" / "rc").unlink(missing_ok=True)  # a later boot's exit code is its own
        env_file = self.workdir / "env.sh"
        env_file.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in guest_env.items()))
        command = f"bash {shlex.quote(str(GUEST_DIR / 'run.sh'))} {shlex.quote(str(env_file))} {shlex.quote(script)}"
        argv = [
            vng, "--disable-kvm", "--run", kernel, "--memory", self.memory, "--cpus", str(self.cpus),
            "--rwdir", str(self.workdir), "--qemu-opts=" + " ".join(self.qemu_opts()), "--exec", command,
        ]
        path = os.environ.get("PATH", "")
        tools = [str(Path(sys.executable).parent), *filter(None, [virtiofsd_dir()])]
        env_vars = {**os.environ, "PATH": ":".join([*tools, path])}
        start = time.monotonic()
        # kept in _GUESTS, so that a test session that ends early (-x, Ctrl-C) stops the guest and
        # its qemu (kill_guests); in pytest's process group, so a kill of that group reaches them too
        with _GUESTS_LOCK:
            if _CLOSED:
                raise RuntimeError("the test session is over: no guest is started")
            # stdin from /dev/null: qemu sets its stdin non-blocking, which, shared with pytest, made
            # ansible-playbook in the unit tier refuse to run ("Non-blocking file handles detected")
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_vars
            )
            _GUESTS.add(proc)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = proc.communicate()
            # what the guest's console said before it stopped answering (a kernel oops or hung
            # task report shows here), kept beside its outputs
            (self.workdir / "console-timeout.log").write_text((out or "") + (err or ""))
            raise
        finally:
            with _GUESTS_LOCK:
                _GUESTS.discard(proc)
        seconds = time.monotonic() - start
        (self.workdir / "console.log").write_text(stdout + stderr)
        rc_file = self.workdir / "out" / "rc"
        rc = int(rc_file.read_text().strip()) if rc_file.exists() else (proc.returncode or 255)
        return GuestRun(rc, seconds, self.workdir / "out", stdout + stderr)


_GUESTS: set[subprocess.Popen[str]] = set()
_GUESTS_LOCK = threading.Lock()
_CLOSED = False  # set at the end of the test session: no guest starts after it


def _kill(proc: subprocess.Popen[str]) -> None:
    """Kill a guest's process tree (vng, qemu, virtiofsd), children first."""
    try:
        tree = psutil.Process(proc.pid)
        family = [*tree.children(recursive=True), tree]
    except psutil.NoSuchProcess:
        return
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def kill_guests() -> int:
    """The test session is over: start no more guests, and kill those still running; how many
    there were."""
    global _CLOSED
    with _GUESTS_LOCK:
        _CLOSED = True
        running = list(_GUESTS)
    for proc in running:
        _kill(proc)
    return len(running)


@dataclass(frozen=True)
class Scenario:
    """One guest boot: its disks, the script it runs (tests/vm/guest/), and how to schedule it."""

    name: str
    script: str
    disks: tuple[LabDisk, ...]
    timeout: float = 900
    expected_s: float = 300  # about how long it boots and runs, to start the longest first
    alone: bool = False  # it asserts timings: no other guest may run beside it
    prepare: Callable[[Lab], dict[str, Any]] | None = None  # on the images, before the boot
    paired: bool = False  # runs with one vCPU beside another paired scenario (docs/lab.md)
    env: tuple[tuple[str, str], ...] = ()  # more environment for the guest script
    reboots: tuple[str, ...] = ()  # scripts of the next boots on the same disk images (Lab.run_boots)

    @property
    def cpus(self) -> int:
        return int(os.environ.get("CACHEWISE_LAB_CPUS", "1" if self.paired else "2"))


class LabPool:
    """Runs the scenarios of a test session's lab modules in the background: first the paired
    ones, ``parallel`` one-vCPU guests at a time (longest first), then the others one by one
    with two vCPUs, those that measure time last, on an otherwise idle host. A module's fixture
    waits for its own scenario while the others go on. On this 2-core machine two one-vCPU
    guests side by side ran the apply, bcache and recommend boots in 37% less time than one
    two-vCPU guest after another; the watch boot (a Textual app beside fio and replays) could
    not keep up with one vCPU, so it runs alone (docs/lab.md).

    The pool may start while the session's other tiers still run (``early``): the unit and TUI
    tests keep one core busy, so until :meth:`widen` (the first lab test) only one paired guest
    runs, on the other core, and nothing that needs two vCPUs or an idle host starts."""

    def __init__(
        self, scenarios: list[Scenario], workdirs: dict[str, Path], parallel: int = 2, early: bool = False
    ) -> None:
        self.scenarios = {s.name: s for s in scenarios}
        self.workdirs = workdirs
        self.parallel = max(1, parallel)
        self.futures: dict[str, Future[GuestRun]] = {s.name: Future() for s in scenarios}
        self.log: list[str] = []
        self._thread: threading.Thread | None = None
        self._limit = 1 if early else self.parallel
        self._widened = threading.Event()
        if not early:
            self._widened.set()
        self._slots = threading.Condition()
        self._running = 0

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run_all, name="lab-pool", daemon=True)
            self._thread.start()

    def widen(self) -> None:
        """The session's lab tier has begun: the host is the lab's, ``parallel`` guests at once."""
        with self._slots:
            self._limit = self.parallel
            self._slots.notify_all()
        self._widened.set()

    def _run_one(self, scenario: Scenario) -> None:
        future = self.futures[scenario.name]
        start = time.monotonic()
        try:
            lab = Lab(list(scenario.disks), workdir=self.workdirs[scenario.name], cpus=scenario.cpus)
            lab.create_images()
            prepared = scenario.prepare(lab) if scenario.prepare else {}
            scripts = [scenario.script, *scenario.reboots]
            run = lab.run_boots(scripts, env=dict(scenario.env), timeout=scenario.timeout)
            run.prepared = prepared
            future.set_result(run)
        except BaseException as exc:  # noqa: BLE001 - the module's fixture re-raises it
            future.set_exception(exc)
        self.log.append(f"{scenario.name}: {time.monotonic() - start:.0f} s")

    def _paired(self, scenario: Scenario) -> None:
        try:
            self._run_one(scenario)
        finally:
            with self._slots:
                self._running -= 1
                self._slots.notify_all()

    def _run_all(self) -> None:
        longest_first = sorted(self.scenarios.values(), key=lambda s: -s.expected_s)
        workers = []
        for scenario in [s for s in longest_first if s.paired]:
            with self._slots:
                self._slots.wait_for(lambda: self._running < self._limit)
                self._running += 1
            worker = threading.Thread(target=self._paired, args=(scenario,), name=f"lab-{scenario.name}", daemon=True)
            worker.start()
            workers.append(worker)
        for worker in workers:
            worker.join()
        self._widened.wait()
        for scenario in [s for s in longest_first if not s.paired and not s.alone]:
            self._run_one(scenario)
        for scenario in [s for s in longest_first if s.alone]:
            self._run_one(scenario)

    def result(self, scenario: Scenario) -> GuestRun:
        """The scenario's run once it has ended (it must have succeeded)."""
        self.start()
        run = self.futures[scenario.name].result()
        print(f"lab {scenario.name}: exit {run.returncode} in {run.seconds:.0f} s")
        assert run.returncode == 0, f"guest scenario {scenario.script} failed:\n{run.log_tail()}"
        return run
