"""The one place that starts external processes.

Every command cachewise runs goes through :class:`CommandRunner`: argv lists only (never a
shell string), ``LC_ALL=C`` so output parses the same everywhere, stdin closed, a timeout
always, and every run logged with its argv, exit code and stderr. Failures surface as typed
errors whose messages are sentences a user can act on. Modelled on blivet's
``util._run_program``.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import stat
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import CachewiseError, codes, next_step

log = logging.getLogger("cachewise.runner")

DEFAULT_TIMEOUT = 60.0

# Which Debian package provides each tool, so a missing-tool error can say what to install.
TOOL_PACKAGES: dict[str, str] = {
    "blkid": "util-linux",
    "lsblk": "util-linux",
    "lvs": "lvm2",
    "pvs": "lvm2",
    "vgs": "lvm2",
    "lvm": "lvm2",
    "lvconvert": "lvm2",
    "lvcreate": "lvm2",
    "lvremove": "lvm2",
    "lvchange": "lvm2",
    "pvcreate": "lvm2",
    "pvremove": "lvm2",
    "vgextend": "lvm2",
    "vgreduce": "lvm2",
    "modprobe": "kmod",
    "wipefs": "util-linux",
    "dmsetup": "dmsetup",
    "make-bcache": "bcache-tools",
    "bcache-super-show": "bcache-tools",
    "fio": "fio",
    "smartctl": "smartmontools",
    "blktrace": "blktrace",
    "udevadm": "udev",
    "lvmconfig": "lvm2",
    "update-initramfs": "initramfs-tools",
    "lsinitramfs": "initramfs-tools-core",
    "dracut": "dracut",
    "lsinitrd": "dracut-core",
}


# Where root finds programs, and the PATH its commands get: directories only root can write.
# A user's PATH (with a writable directory, or ".") is not searched as root: a planted blkid
# there would run as root. Tests hand a runner its tool directories explicitly (tool_dirs).
SYSTEM_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")

codes(
    {
        "command-error": "`{command}` could not run: {why}",
        "tool-missing": "{tool} is not installed, so `{command}` could not run",
        "tool-untrusted": "{path} is not a program root can trust ({why}), so `{command}` did not run",
        "permission-denied": "`{command}` was refused ({detail})",
        "timed-out": "`{command}` did not finish within {timeout:g} s and was stopped",
        "command-failed": "`{command}` failed with exit code {returncode}: {tail}",
    }
)


class CommandError(CachewiseError):
    """A command could not be run or did not succeed."""

    def __init__(self, argv: Sequence[str], why: str = "", *, code: str = "command-error", **facts: Any) -> None:
        self.argv = list(argv)
        super().__init__(code, command=shlex.join(argv), why=why, **facts)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


class ToolMissing(CommandError):
    """The program is not installed (not on PATH)."""

    def __init__(self, argv: Sequence[str]) -> None:
        tool = argv[0]
        package = TOOL_PACKAGES.get(os.path.basename(tool))
        self.tool = tool
        self.package = package
        super().__init__(argv, code="tool-missing", tool=tool, next=[next_step("install", package=package or tool)])


class ToolUntrusted(CommandError):
    """As root, the program found is one another user could have changed."""

    def __init__(self, argv: Sequence[str], path: str, why: str) -> None:
        package = TOOL_PACKAGES.get(os.path.basename(argv[0]))
        super().__init__(
            argv, code="tool-untrusted", path=path, why=why, next=[next_step("install", package=package or argv[0])]
        )


def untrusted(path: str) -> str | None:
    """Why root should not run the program at ``path`` (None: it may): the file, or a directory
    on its way (links resolved), belongs to another user or can be written by other users."""
    real = Path(os.path.realpath(path))
    at = Path("/")
    for part in real.parts:
        at = at / part
        try:
            st = os.stat(at)
        except OSError as exc:
            return exc.strerror or str(exc)
        if st.st_uid != 0:
            return f"{at} does not belong to root"
        # A sticky directory (/tmp) lets others add files but not touch root's: the next
        # component decides.
        if st.st_mode & 0o022 and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX and at != real):
            return f"other users can write to {at}"
    return None


class PermissionDenied(CommandError):
    """The command failed because it needs more privileges than we have."""

    def __init__(self, argv: Sequence[str], stderr: str) -> None:
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else "permission denied"
        self.stderr = stderr
        super().__init__(argv, code="permission-denied", detail=detail, next=[next_step("become-root")])


class TimedOut(CommandError):
    """The command did not finish within its timeout and was killed."""

    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        self.timeout = timeout
        super().__init__(argv, code="timed-out", timeout=timeout)


class CommandFailed(CommandError):
    """The command ran and exited non-zero."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        tail = " ".join(stderr.strip().splitlines()[-3:]) or "no error output"
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(argv, code="command-failed", returncode=returncode, tail=tail)


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration: float


_PERMISSION_MARKERS = (
    "permission denied",
    "operation not permitted",
    "must be root",
    "only root",
    "are you root",
    "requires root",
)


def _looks_like_permission_error(stderr: str) -> bool:
    low = stderr.lower()
    return any(m in low for m in _PERMISSION_MARKERS)


@dataclass
class CommandRunner:
    """Runs programs. Construct one per process and hand it to everything that runs tools."""

    default_timeout: float = DEFAULT_TIMEOUT
    extra_env: Mapping[str, str] = field(default_factory=dict)
    history: list[CommandResult] = field(default_factory=list)
    keep_history: int = 200
    # Where programs are found. None: SYSTEM_DIRS as root; a user's PATH with the sbin
    # directories otherwise. Tests give their own.
    tool_dirs: tuple[str, ...] | None = None

    @property
    def trusting(self) -> bool:
        """Whether programs must be ones root can trust (as root, unless tool_dirs were given)."""
        return self.tool_dirs is None and os.geteuid() == 0

    def which(self, tool: str) -> str | None:
        """Full path of ``tool`` where this runner finds programs (see tool_dirs)."""
        return shutil.which(tool, path=self._path())

    def _path(self) -> str:
        if self.tool_dirs is not None:
            return os.pathsep.join(self.tool_dirs)
        if os.geteuid() == 0:
            return os.pathsep.join(SYSTEM_DIRS)
        path = os.environ.get("PATH", "/usr/bin:/bin")
        parts = path.split(os.pathsep)
        for extra in ("/usr/sbin", "/sbin", "/usr/local/sbin"):
            if extra not in parts:
                parts.append(extra)
        return os.pathsep.join(parts)

    def _resolve(self, argv: list[str]) -> str:
        """The program to start for ``argv``: found as :meth:`which` does, and as root one that
        only root could have written (ToolUntrusted otherwise)."""
        exe = argv[0] if os.sep in argv[0] else self.which(argv[0])
        if exe is None or not os.path.exists(exe):
            log.info("run %s: tool missing", shlex.join(argv))
            raise ToolMissing(argv)
        why = untrusted(exe) if self.trusting else None
        if why:
            log.warning("run %s: %s is not trusted (%s)", shlex.join(argv), exe, why)
            raise ToolUntrusted(argv, exe, why)
        return exe

    def env(self) -> dict[str, str]:
        # As root, the dynamic loader's variables are not passed on: they would run other code.
        env = {k: v for k, v in os.environ.items() if not (self.trusting and k.startswith("LD_"))}
        env.update({"LC_ALL": "C", "LANG": "C", "PATH": self._path()})
        # lvm2 warns on stderr about every inherited descriptor; we close them anyway.
        env["LVM_SUPPRESS_FD_WARNINGS"] = "1"
        env.update(self.extra_env)
        return env

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        check: bool = True,
    ) -> CommandResult:
        """Run ``argv`` and return its result; raise a :class:`CommandError` subclass on failure.

        With ``check=False`` a non-zero exit is returned rather than raised (a missing tool,
        a timeout and a permission problem still raise).
        """
        if isinstance(argv, str):
            raise TypeError("commands are argv lists, never shell strings")
        argv = [str(a) for a in argv]
        if not argv:
            raise ValueError("empty command")
        limit = self.default_timeout if timeout is None else timeout
        exe = self._resolve(argv)
        start = time.monotonic()
        try:
            proc = subprocess.run(  # noqa: S603 - argv list, never a shell
                [exe, *argv[1:]],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=limit,
                env=self.env(),
                close_fds=True,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            log.warning("run %s: timed out after %gs", shlex.join(argv), limit)
            raise TimedOut(argv, limit) from exc
        except PermissionError as exc:
            raise PermissionDenied(argv, str(exc)) from exc
        except OSError as exc:  # it cannot start at all: a bad interpreter line, not an executable
            raise CommandError(argv, exc.strerror or str(exc)) from exc
        result = CommandResult(tuple(argv), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
        self._record(result)
        if proc.returncode != 0:
            if _looks_like_permission_error(proc.stderr) and os.geteuid() != 0:
                raise PermissionDenied(argv, proc.stderr)
            if check:
                raise CommandFailed(argv, proc.returncode, proc.stderr)
        return result

    def start(self, argv: Sequence[str], *, timeout: float | None = None) -> Running:
        """Start ``argv`` without waiting, for long work that reports progress while it runs.

        The same rules as :meth:`run`: argv only, LC_ALL=C, stdin closed, logged, and
        :meth:`Running.wait` enforces the timeout.
        """
        if isinstance(argv, str):
            raise TypeError("commands are argv lists, never shell strings")
        argv = [str(a) for a in argv]
        limit = self.default_timeout if timeout is None else timeout
        exe = self._resolve(argv)
        try:
            proc = subprocess.Popen(  # noqa: S603 - argv list, never a shell
                [exe, *argv[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                env=self.env(),
                close_fds=True,
            )
        except PermissionError as exc:
            raise PermissionDenied(argv, str(exc)) from exc
        except OSError as exc:
            raise CommandError(argv, exc.strerror or str(exc)) from exc
        return Running(self, argv, proc, limit)

    def _record(self, result: CommandResult) -> None:
        log.info(
            "run %s -> exit %d in %.2fs%s",
            shlex.join(result.argv),
            result.returncode,
            result.duration,
            f"; stderr: {result.stderr.strip()[:500]}" if result.stderr.strip() else "",
        )
        self.history.append(result)
        del self.history[: -self.keep_history]


class Running:
    """A started command whose output is collected when it ends (see :meth:`CommandRunner.start`)."""

    def __init__(self, runner: CommandRunner, argv: list[str], proc: subprocess.Popen[str], timeout: float) -> None:
        self._runner = runner
        self.argv = argv
        self._proc = proc
        self._timeout = timeout
        self._started = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def running(self) -> bool:
        return self._proc.poll() is None

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()

    def wait(self, check: bool = True) -> CommandResult:
        """Wait for the end (within the timeout given to start) and return or raise as run() does."""
        remaining = max(0.0, self._timeout - self.elapsed)
        try:
            stdout, stderr = self._proc.communicate(timeout=remaining)
        except subprocess.TimeoutExpired as exc:
            self._proc.kill()
            self._proc.communicate()
            log.warning("run %s: timed out after %gs", shlex.join(self.argv), self._timeout)
            raise TimedOut(self.argv, self._timeout) from exc
        result = CommandResult(tuple(self.argv), self._proc.returncode, stdout, stderr, self.elapsed)
        self._runner._record(result)
        if result.returncode != 0:
            if _looks_like_permission_error(stderr) and os.geteuid() != 0:
                raise PermissionDenied(self.argv, stderr)
            if check:
                raise CommandFailed(self.argv, result.returncode, stderr)
        return result
