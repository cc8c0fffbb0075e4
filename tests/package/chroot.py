"""A clean Debian 12 chroot for the package tests, made once with debootstrap and cached.

The base (minbase plus man-db, so `man -w` can be asked) is kept as a tarball in
~/.cache/cachewise-package/ with apt's package lists; each test extracts a fresh copy. Packages
apt downloads into a chroot are kept in a shared archive directory, so a dependency is fetched
once. Needs root (chroot, mount), debootstrap and the Debian mirror.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

SUITE = "bookworm"
MIRROR = os.environ.get("CACHEWISE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cachewise-package"
BASE = CACHE / f"{SUITE}-minbase.tar"
ARCHIVES = CACHE / "apt-archives"
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8",
       "HOME": "/root"}


def run(*cmd: str | Path, check: bool = True, **kw: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], check=False, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def base_tarball() -> Path:
    """The cached base system, made with debootstrap the first time (about 40 s)."""
    if BASE.exists():
        return BASE
    CACHE.mkdir(parents=True, exist_ok=True)
    work = CACHE / "debootstrap.tmp"
    shutil.rmtree(work, ignore_errors=True)
    run("debootstrap", "--variant=minbase", "--include=man-db", SUITE, work, MIRROR)
    run("chroot", work, "apt-get", "clean", env=ENV)
    run("tar", "-C", work, "-cf", f"{BASE}.tmp", ".")
    os.replace(f"{BASE}.tmp", BASE)
    shutil.rmtree(work)
    return BASE


@contextlib.contextmanager
def fresh_chroot(where: Path) -> Iterator[Path]:
    """A fresh copy of the base at `where`, with /proc, /sys and /dev, and DNS for apt."""
    root = where / "root"
    root.mkdir()
    run("tar", "-C", root, "-xf", base_tarball())
    shutil.copy("/etc/resolv.conf", root / "etc/resolv.conf")
    ARCHIVES.mkdir(parents=True, exist_ok=True)
    mounts = [(root / "proc", ["-t", "proc", "proc"]), (root / "sys", ["--rbind", "/sys"]),
              (root / "dev", ["--rbind", "/dev"]), (root / "var/cache/apt/archives", ["--bind", str(ARCHIVES)])]
    done: list[Path] = []
    try:
        for target, how in mounts:
            run("mount", *how, target)
            done.append(target)
        yield root
    finally:
        for target in reversed(done):
            run("umount", "-R", "-l", target, check=False)


def in_chroot(root: Path, *cmd: str, check: bool = True, user: str | None = None) -> subprocess.CompletedProcess[str]:
    spec = [f"--userspec={user}"] if user else []
    return run("chroot", *spec, root, *cmd, check=check, env=ENV)


def apt_get(root: Path, *args: str) -> None:
    """apt-get in the chroot; when the cached lists name versions the mirror no longer has,
    update them and try again."""
    if in_chroot(root, "apt-get", "-y", "-q", *args, check=False).returncode != 0:
        in_chroot(root, "apt-get", "-q", "update")
        in_chroot(root, "apt-get", "-y", "-q", *args)


def files(root: Path, skip: tuple[str, ...]) -> set[str]:
    """Every path in the chroot but the pseudo file systems and the given prefixes."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = "/" + os.path.relpath(dirpath, root).removeprefix(".").lstrip("/")
        dirnames[:] = [d for d in dirnames
                       if not f"{rel.rstrip('/')}/{d}".startswith(("/proc", "/sys", "/dev", *skip))]
        out.update(f"{rel.rstrip('/')}/{name}" for name in filenames + dirnames)
    return out
