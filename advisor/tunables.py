"""bcache's tunables that the kernel forgets, kept in a file under /etc and set again at boot.

The kernel keeps a bcache device's cache mode in its backing device's superblock (a write to
``cache_mode`` rewrites the superblock: drivers/md/bcache/sysfs.c), but ``sequential_cutoff``
and ``writeback_percent`` live in memory only: each registration, so each boot, starts again at
4.0M and 10. LVM keeps everything the lvmcache and writecache recipes set (mode, policy, chunk
size, writecache settings) in its metadata, so only these two need keeping.

cachewise keeps them in one file per cached device, ``/etc/cachewise/bcache/<UUID>.conf``, named
by the backing device's bcache UUID: the ``dev.uuid`` bcache-super-show prints, sysfs's
``backing_dev_uuid``, the kernel's ``CACHED_UUID`` uevent property and udev's
``/dev/bcache/by-uuid/<UUID>``, which survives bcacheN renumbering. The package's udev rule
writes them again for each bcache device that appears (the CLI's tunables command, docs/tunables.md).

The file holds ``key=value`` lines (``#`` comments and blank lines allowed). It is written
whole and atomically (advisor/outputs.py), root's and 0644, and read only when it is a regular
file (never a link) of at most 4 KiB, owned by root (or by the user reading it) and writable by
no one else, in a folder writable by no one else, holding only the keys below with values in
their ranges; any other file is refused with one sentence.
"""

from __future__ import annotations

import errno
import os
import pwd
import re
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from advisor import outputs
from advisor.errors import CachewiseError, codes
from advisor.plan.language import UUID
from advisor.readers.bcache import hprint, hprint_bytes, read_files

CONFIG_DIR = Path("/etc/cachewise/bcache")
SYS = Path("/sys")
MAX_BYTES = 4096
# The tunables the kernel forgets, with the values its sysfs store takes: sequential_cutoff is an
# unsigned int, writeback_percent at most bch_cutoff_writeback (40 unless the module says less).
KEYS: dict[str, tuple[int, int]] = {"sequential_cutoff": (0, (1 << 32) - 1), "writeback_percent": (0, 40)}
MARK = b"# cachewise"
HEADER = (
    "# cachewise: bcache tunables the kernel forgets at every boot. cachewise's udev rule sets them\n"
    "# again whenever this device appears. Edit the values as root; a plan that removes the cache\n"
    "# removes this file.\n"
)
NAME = re.compile(f"({UUID})\\.conf")

codes(
    {
        "tunables-refused": "{path} {why}, so cachewise does not use it",
        "tunables-unreadable": "cannot read {path} ({why})",
        "tunables-unwritable": "cannot write {path} ({why})",
        "tunables-no-device": "{device} is not a bcache device or a bcache backing device on this machine",
        "tunables-not-ready": "{device} did not show its backing device's bcache directory within {seconds:g} s",
        "tunables-not-set": "bcache did not take {values} from {path} ({why})",
    }
)


class TunablesError(CachewiseError):
    """A tunables file that cannot be trusted, read or written, or a device that is not bcache's."""


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def trusted_owners() -> tuple[int, ...]:
    """Whose files and folders settings are taken from: root's, and the reader's own."""
    return (0, os.geteuid())


def _untrusted(st: os.stat_result) -> str | None:
    """Why a file or folder is not one root may take settings from (None: it may)."""
    if st.st_uid not in trusted_owners():
        return f"belongs to {_owner(st.st_uid)}"
    if st.st_mode & 0o022:
        return "can be written by other users"
    return None


def _refused(path: Path, why: str) -> TunablesError:
    return TunablesError("tunables-refused", path=path, why=why)


# --- the settings, in a plan's one line and in the file ---


def kernel_text(key: str, value: int) -> str:
    """A value as bcache's sysfs file shows it (sequential_cutoff through bch_hprint: '4.0M')."""
    return hprint(value) if key == "sequential_cutoff" else str(value)


def same(key: str, live: str, value: int) -> bool:
    """Whether a sysfs file's text shows this value."""
    text = live.strip()
    if text == kernel_text(key, value):
        return True
    return (hprint_bytes(text) if key == "sequential_cutoff" else _int(text)) == value


def _int(text: str) -> int | None:
    return int(text) if re.fullmatch(r"[0-9]{1,20}", text) else None


def _setting(text: str) -> tuple[str, int]:
    """``key=value`` as a setting; ValueError saying what is wrong with it."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or key not in KEYS:
        raise ValueError(f"is not a setting cachewise keeps ({' or '.join(KEYS)}=NUMBER)")
    low, high = KEYS[key]
    number = _int(value)
    if number is None or not low <= number <= high or (value != "0" and value.startswith("0")):
        raise ValueError(f"sets {key} to {value[:24]!r}, not a whole number from {low} to {high}")
    return key, number


def _ordered(values: Mapping[str, int]) -> dict[str, int]:
    return {k: values[k] for k in KEYS if k in values}


def settings_text(values: Mapping[str, int]) -> str:
    """The one line a plan carries: 'sequential_cutoff=4194304 writeback_percent=10'."""
    return " ".join(f"{k}={v}" for k, v in _ordered(values).items())


def parse_settings(text: str) -> dict[str, int]:
    """A plan's one line back into values; ValueError when it is not one."""
    values: dict[str, int] = {}
    for item in text.split(" ") if text else []:
        key, value = _setting(item)
        if key in values:
            raise ValueError(f"sets {key} twice")
        values[key] = value
    return _ordered(values)


def render(values: Mapping[str, int]) -> bytes:
    """The file's content."""
    return (HEADER + "".join(f"{k}={v}\n" for k, v in _ordered(values).items())).encode()


def parse(data: bytes, path: Path) -> dict[str, int]:
    """The file's values; TunablesError naming the first line that is not a setting cachewise
    keeps (a key twice, an unknown key, a value out of range, a control character)."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise _refused(path, "is not plain ASCII text") from None
    values: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if re.search(r"[^\t\x20-\x7e]", line):
            raise _refused(path, f"holds a control character on line {number}")
        item = line.strip()
        if not item or item.startswith("#"):
            continue
        try:
            key, value = _setting(item)
        except ValueError as exc:
            raise _refused(path, f"line {number} {exc}") from None
        if key in values:
            raise _refused(path, f"line {number} sets {key} a second time")
        values[key] = value
    return _ordered(values)


# --- the files ---


@dataclass(frozen=True)
class Configured:
    """One device's file: the backing device's UUID, where the file is and what it sets."""

    uuid: str
    path: Path
    values: dict[str, int]

    @property
    def settings(self) -> str:
        return settings_text(self.values)


def path_of(uuid: str, config_dir: Path | None = None) -> Path:
    if not re.fullmatch(UUID, uuid):
        raise ValueError(f"{uuid!r} is not a bcache UUID")
    return (config_dir or CONFIG_DIR) / f"{uuid}.conf"


def _open_folder(folder: Path) -> int | None:
    """A descriptor for the folder of the files (None: there is none), refused when root should
    not take settings from it: reached through another user's link, another user's folder, or
    one others can write to."""
    try:
        fd = outputs.walk(folder)
    except outputs.Unsafe as exc:
        raise _refused(folder, f"cannot be trusted ({exc.why})") from None
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise _refused(folder, "is not a folder") from None
    except OSError as exc:
        raise TunablesError("tunables-unreadable", path=folder, why=exc.strerror or exc) from None
    why = _untrusted(os.fstat(fd))
    if why:
        os.close(fd)
        raise _refused(folder, why)
    return fd


def read(uuid: str, config_dir: Path | None = None) -> Configured | None:
    """The file of the device with this UUID (None: it has none); TunablesError when there is
    one root should not use."""
    path = path_of(uuid, config_dir)
    dfd = _open_folder(path.parent)
    if dfd is None:
        return None
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(path, "is a link") from None
        raise TunablesError("tunables-unreadable", path=path, why=exc.strerror or exc) from None
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        why = "is not a regular file" if not stat.S_ISREG(st.st_mode) else _untrusted(st)
        if why is None and st.st_size > MAX_BYTES:
            why = f"is larger than {MAX_BYTES} bytes"
        if why:
            raise _refused(path, why)
        data = b""
        while len(data) <= MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        raise TunablesError("tunables-unreadable", path=path, why=exc.strerror or exc) from None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise _refused(path, f"is larger than {MAX_BYTES} bytes")
    return Configured(uuid, path, parse(data, path))


def configured(config_dir: Path | None = None) -> tuple[list[Configured], list[TunablesError]]:
    """Every device's file that can be used, and the refusals of the others. Names that are not
    ``<UUID>.conf`` (an editor's backup, a writer's temporary file) are no device's file. A
    folder that cannot be trusted is a TunablesError."""
    folder = config_dir or CONFIG_DIR
    dfd = _open_folder(folder)
    if dfd is None:
        return [], []
    try:
        names = sorted(os.listdir(dfd))
    finally:
        os.close(dfd)
    found, refused = [], []
    for name in names:
        m = NAME.fullmatch(name)
        if m is None:
            continue
        try:
            conf = read(m[1], folder)
        except TunablesError as exc:
            refused.append(exc)
            continue
        if conf is not None:
            found.append(conf)
    return found, refused


def _make_folders(folder: Path) -> None:
    """The folder and its missing parents, 0755 whatever the umask, each made and set through
    its parent's descriptor."""
    missing: list[Path] = []
    at = folder
    while not os.path.lexists(at) and at != at.parent:
        missing.append(at)
        at = at.parent
    for d in reversed(missing):
        parent = outputs.walk(d.parent)
        try:
            try:
                os.mkdir(d.name, 0o755, dir_fd=parent)
            except FileExistsError:
                continue
            fd = os.open(d.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
            try:
                os.fchmod(fd, 0o755)
            finally:
                os.close(fd)
        finally:
            os.close(parent)


def write(uuid: str, values: Mapping[str, int], config_dir: Path | None = None) -> Path:
    """The device's file, written whole (replacing cachewise's own file, never another's), 0644."""
    path = path_of(uuid, config_dir)
    for key, value in values.items():
        try:
            _setting(f"{key}={value}")
        except ValueError as exc:
            raise TunablesError("tunables-unwritable", path=path, why=f"it {exc}") from None
    try:
        _make_folders(path.parent)
        dfd = _open_folder(path.parent)
        if dfd is not None:
            os.close(dfd)
        outputs.replace_file(path, render(values), lambda head: head.startswith(MARK), mode=0o644)
    except outputs.Unsafe as exc:
        raise TunablesError("tunables-unwritable", path=path, why=exc.why) from None
    except OSError as exc:
        raise TunablesError("tunables-unwritable", path=path, why=exc.strerror or exc) from None
    return path


def remove(uuid: str, config_dir: Path | None = None) -> bool:
    """Remove the device's file (False: there was none). The name is removed, never followed."""
    path = path_of(uuid, config_dir)
    try:
        dfd = outputs.walk(path.parent)
    except FileNotFoundError:
        return False
    except outputs.Unsafe as exc:
        raise TunablesError("tunables-unwritable", path=path, why=exc.why) from None
    except OSError as exc:
        raise TunablesError("tunables-unwritable", path=path, why=exc.strerror or exc) from None
    try:
        os.unlink(path.name, dir_fd=dfd)
        os.fsync(dfd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise TunablesError("tunables-unwritable", path=path, why=exc.strerror or exc) from None
    finally:
        os.close(dfd)
    return True


# --- the devices ---


@dataclass(frozen=True)
class Backing:
    """A registered bcache backing device as sysfs shows it, with the kernel's text of each
    tunable (``live``)."""

    name: str  # the backing device's kernel name
    device: str | None  # its bcacheN (None: not running)
    uuid: str
    directory: Path  # its sysfs bcache/ directory
    live: dict[str, str] = field(default_factory=dict)

    @property
    def shown_name(self) -> str:
        return self.device or self.name


def _backing(directory: Path) -> Backing | None:
    files = read_files(directory, ("backing_dev_uuid", *KEYS), links=("dev",))
    uuid = files.get("backing_dev_uuid", "")
    if not re.fullmatch(UUID, uuid):
        return None
    real = Path(os.path.realpath(directory))
    live = {k: files[k] for k in KEYS if k in files}
    return Backing(real.parent.name, files.get("dev"), uuid, real, live)


def backings(sys_root: Path | None = None) -> list[Backing]:
    """Every registered backing device (a bcacheN's bcache/ is its backing device's, so each is
    listed once)."""
    found: dict[Path, Backing] = {}
    for uuid_file in sorted(((sys_root or SYS) / "class" / "block").glob("*/bcache/backing_dev_uuid")):
        b = _backing(uuid_file.parent)
        if b is not None:
            found.setdefault(b.directory, b)
    return sorted(found.values(), key=lambda b: b.shown_name)


def kernel_name(device: str) -> str:
    """The kernel name a device is given by: bcache0, /dev/bcache0, /dev/bcache/by-uuid/U, sdb."""
    return os.path.basename(os.path.realpath(device)) if device.startswith("/dev/") else device


def find(
    device: str,
    sys_root: Path | None = None,
    wait: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Backing:
    """The backing device of a bcacheN or a backing device, by any of its names; looked for
    again for up to ``wait`` seconds (the kernel makes bcacheN's link to it just after the
    uevent udev acts on). TunablesError when it is not one."""
    name = kernel_name(device)
    if not re.fullmatch(r"[A-Za-z0-9_.:+-]{1,64}", name):
        raise TunablesError("tunables-no-device", device=device)
    block = (sys_root or SYS) / "class" / "block" / name
    deadline = clock() + wait
    while True:
        for directory in (block / "bcache", *sorted(block.glob("slaves/*/bcache"))):
            found = _backing(directory) if (directory / "backing_dev_uuid").is_file() else None
            if found is not None:
                return found
        # A bcache/ directory without a backing device's UUID is a cache device's or a flash-only
        # volume's: nothing to wait for.
        if (block / "bcache").is_dir() or clock() >= deadline:
            break
        sleep(0.1)
    if wait and block.exists() and not (block / "bcache").is_dir():
        raise TunablesError("tunables-not-ready", device=device, seconds=wait)
    raise TunablesError("tunables-no-device", device=device)


@dataclass(frozen=True)
class Change:
    """One tunable set from the file: the kernel's text before and after, or why it failed."""

    key: str
    configured: int
    before: str | None
    after: str | None
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "configured": self.configured,
            "configured_text": kernel_text(self.key, self.configured),
            "before": self.before,
            "after": self.after,
            "changed": self.changed,
            "error": self.error,
        }


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def set_values(backing: Backing, values: Mapping[str, int]) -> list[Change]:
    """Write each value to the device's sysfs file (every time: the kernel takes the same value
    again without effect)."""
    out = []
    for key, value in _ordered(values).items():
        path = backing.directory / key
        before, error = _read(path), None
        try:
            with open(path, "w") as fh:
                fh.write(str(value))
        except OSError as exc:
            error = exc.strerror or str(exc)
        out.append(Change(key, value, before, _read(path), error))
    return out


@dataclass(frozen=True)
class Applied:
    """What applying one device's file did (``configured`` None: the device has no file)."""

    backing: Backing
    configured: Configured | None
    changes: tuple[Change, ...] = ()

    @property
    def failed(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.error)

    def to_json(self) -> dict[str, object]:
        return {
            "device": self.backing.device,
            "backing": self.backing.name,
            "uuid": self.backing.uuid,
            "file": str(self.configured.path) if self.configured else None,
            "changes": [c.to_json() for c in self.changes],
        }


def apply(backing: Backing, config_dir: Path | None = None) -> Applied:
    """Set the device's tunables from its file, if it has one (a value the kernel refused is in
    ``failed``). TunablesError when the file is refused."""
    conf = read(backing.uuid, config_dir)
    if conf is None:
        return Applied(backing, None)
    return Applied(backing, conf, tuple(set_values(backing, conf.values)))


def not_set(applied: Applied) -> TunablesError | None:
    """The error of what the kernel refused (None: it took every value)."""
    failed = applied.failed
    if not failed or applied.configured is None:
        return None
    return TunablesError(
        "tunables-not-set",
        changed=len(failed) < len(applied.changes),
        values=", ".join(f"{c.key}={c.configured}" for c in failed),
        path=applied.configured.path,
        why="; ".join(str(c.error) for c in failed),
    )
