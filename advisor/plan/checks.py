"""The check vocabulary of plans: one frozen dataclass per kind, each with its three renderings.

A check is a fact about the live system that must hold before a step runs (its precondition)
or that shows the step took effect (its postcondition). Every kind renders as

- :meth:`Check.describe`: the sentence the preview and the refusals show;
- :meth:`Check.holds`: its evaluation against a :class:`SystemView` (advisor.apply.state);
- :meth:`Check.ansible`: a read-only shell command and a Jinja condition on its registered
  result ``r``, for the playbook form (recipes/ansible.py).

The JSON form (``{"kind": ..., "args": {...}}``) is part of the plan file schema
(cachewise.plan/1); :func:`from_json` refuses kinds it does not know.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol, TypeVar

from advisor.disks.devices import Device
from advisor.errors import Described, codes
from advisor.plan.language import TUNABLES_FILE
from advisor.readers.lvm import Lv

# Paths a plan may write or read in sysfs. ``{ROLE}`` stands for the sysfs directory of the
# plan's device with that role (/sys/class/block/NAME), resolved when the step runs: kernel
# names change between boots.
SYSFS_PATH = re.compile(r"(/sys/fs/bcache/|\{[a-z]+\}/)[A-Za-z0-9_.:/-]*")


C = TypeVar("C", bound="Check")


codes({"bad-check": "{why}"})


class CheckError(Described, ValueError):
    """A check in a plan file is not one cachewise knows, or has bad arguments."""

    CODE = "bad-check"


class SystemView(Protocol):
    """What checks look at. advisor.apply.state.LiveState reads it from the machine."""

    def pv_vg(self, device: str) -> str | None:
        """The VG of the physical volume at this path ('' in none); None when it is no PV."""
        ...

    def lv(self, name: str) -> Lv | None:
        """The LV named VG/LV, hidden ones included."""
        ...

    def device(self, path: str) -> Device | None: ...

    def partitions(self, dev: Device) -> list[Device]: ...

    def initramfs_lacks(self, needs: str) -> list[str]:
        """What the installed kernels' initramfs images lack of what assembling a device of
        ``needs`` takes (advisor/health/boot.py), each in a few words; empty: nothing."""
        ...

    def read_sysfs(self, path: str) -> str | None:
        """A sysfs file's contents (``{role}`` resolved), None when it cannot be read."""
        ...

    def sysfs_exists(self, path: str) -> bool: ...

    def read_config(self, path: str) -> str | None:
        """What cachewise's tunables file at this path (a plan's {backing-uuid} resolved) sets, in
        a plan's one-line form; '' when there is a file cachewise does not use; None when there is
        none (or the device's UUID cannot be read)."""
        ...


@dataclass(frozen=True)
class Ansible:
    """A read-only command for the playbook (run by the raw module, stderr dropped) and a Jinja
    condition on its result, registered under the name given to :meth:`Check.ansible`."""

    argv: tuple[str, ...]
    condition: str
    templated: bool = False  # argv holds the playbook's own variables (a device's kernel name)


def _quoted(value: str) -> str:
    return json.dumps(value)  # a Jinja string literal


def kname_var(role: str) -> str:
    """The playbook variable that holds the kernel name of the plan's device with this role."""
    return f"cw_kname_{role}"


def role_of(path: str) -> str | None:
    return path[1:].partition("}")[0] if path.startswith("{") else None


def _playbook_path(path: str) -> str:
    """A sysfs path for the playbook: ``{role}`` becomes /sys/class/block/ and the kernel name
    the playbook looked up (recipes/ansible.py registers it with lsblk)."""
    role = role_of(path)
    if role is None:
        return path
    return f"/sys/class/block/{{{{ {kname_var(role)}.stdout | trim }}}}{path[len(role) + 2 :]}"


@dataclass(frozen=True)
class Check:
    kind: ClassVar[str] = ""
    negated: ClassVar[bool] = False
    registry: ClassVar[dict[str, type[Check]]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.kind:
            Check.registry[cls.kind] = cls

    @property
    def args(self) -> dict[str, str]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "args": self.args}

    @property
    def role(self) -> str | None:
        """The plan device role a ``{role}`` sysfs path of this check refers to."""
        path = getattr(self, "path", None)
        return role_of(path) if isinstance(path, str) else None

    # The three renderings; a kind without one fails tests/unit/test_checks.py.
    def describe(self) -> str:
        raise NotImplementedError

    def holds(self, system: SystemView) -> bool:
        raise NotImplementedError

    def ansible(self, r: str = "r") -> Ansible:
        raise NotImplementedError


def from_json(data: Any) -> Check:
    """A check from its plan-file form; CheckError says what is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("args"), dict):
        raise CheckError(f'a check must be {{"kind": ..., "args": {{...}}}}, not {str(data)[:60]!r}')
    cls = Check.registry.get(str(data.get("kind")))
    if cls is None:
        raise CheckError(f"unknown check {data.get('kind')!r}")
    args = data["args"]
    names = {f.name for f in fields(cls)}
    if set(args) != names or not all(isinstance(v, str) for v in args.values()):
        raise CheckError(
            f"the check {cls.kind!r} takes the text arguments {', '.join(sorted(names))}, "
            f"not {', '.join(sorted(map(str, args))) or 'none'}"
        )
    if "path" in names and not SYSFS_PATH.fullmatch(args["path"]) or ".." in args.get("path", ""):
        raise CheckError(f"the check {cls.kind!r} reads {args['path']!r}; plans only look at bcache's sysfs files")
    if "file" in names and args["file"] != TUNABLES_FILE:
        raise CheckError(f"the check {cls.kind!r} reads {args['file']!r}; plans only look at {TUNABLES_FILE}")
    return cls(**args)


def _not(cond: str) -> str:
    return f"not ({cond})"


def _negation(cls: type[C], kind: str) -> type[C]:
    """The kind that holds where ``cls`` does not: the same arguments, every rendering negated."""
    return type(
        f"Not{cls.__name__}",
        (cls,),
        {"kind": kind, "negated": True, "__module__": cls.__module__, "__doc__": f"Not: {cls.__doc__}"},
    )


# --- LVM ---


@dataclass(frozen=True)
class Pv(Check):
    """The device is an LVM physical volume (of a given VG, for pv_in_vg), or, negated, is not."""

    kind: ClassVar[str] = "pv"
    device: str

    @property
    def in_vg(self) -> str | None:
        return getattr(self, "vg", None)

    def describe(self) -> str:
        what = f"a physical volume of VG {self.in_vg}" if self.in_vg else "an LVM physical volume"
        return f"{self.device} is {'not ' if self.negated else ''}{what}"

    def holds(self, system: SystemView) -> bool:
        vg = system.pv_vg(self.device)
        return (vg is not None if self.in_vg is None else vg == self.in_vg) != self.negated

    def ansible(self, r: str = "r") -> Ansible:
        same_vg = f" and ({r}.stdout | trim) == {_quoted(self.in_vg)}" if self.in_vg else ""
        cond = f"({r}.rc == 0{same_vg})"
        return Ansible(
            ("pvs", "--noheadings", "-o", "vg_name" if self.in_vg else "pv_name", self.device),
            _not(cond) if self.negated else cond,
        )


NotPv = _negation(Pv, "not_pv")


@dataclass(frozen=True)
class PvInVg(Pv):
    kind: ClassVar[str] = "pv_in_vg"
    vg: str


NotPvInVg = _negation(PvInVg, "not_pv_in_vg")


@dataclass(frozen=True)
class _Exists(Check):
    """Something exists (or, negated, does not): ``subject`` and ``lookup`` are templates over the
    check's arguments, ``lookup`` a command that succeeds exactly when it exists."""

    subject: ClassVar[str]
    lookup: ClassVar[tuple[str, ...]]

    def describe(self) -> str:
        return f"{self.subject.format(**self.args)} {'does not exist' if self.negated else 'exists'}"

    def holds(self, system: SystemView) -> bool:
        return self.found(system) != self.negated

    def found(self, system: SystemView) -> bool:
        raise NotImplementedError

    def ansible(self, r: str = "r") -> Ansible:
        values = {k: _playbook_path(v) if k == "path" else v for k, v in self.args.items()}
        return Ansible(
            tuple(a.format(**values) for a in self.lookup),
            f"{r}.rc != 0" if self.negated else f"{r}.rc == 0",
            templated=role_of(str(self.args.get("path", ""))) is not None,
        )


@dataclass(frozen=True)
class LvExists(_Exists):
    kind, subject, lookup = "lv", "LV {lv}", ("lvs", "{lv}")
    lv: str

    def found(self, system: SystemView) -> bool:
        return system.lv(self.lv) is not None


NoLv = _negation(LvExists, "no_lv")


@dataclass(frozen=True)
class LvComplete(Check):
    """The LV has no extents on a physical volume lvm2 cannot find (the ninth letter of its
    lv_attr is not ``p``, partial): a mirror's repaired leg is on a device that is there."""

    kind: ClassVar[str] = "lv_complete"
    lv: str

    def describe(self) -> str:
        if self.negated:
            return f"LV {self.lv} has a part on a missing device (its cache's SSD is gone)"
        return f"LV {self.lv} has no part on a missing device"

    def holds(self, system: SystemView) -> bool:
        row = system.lv(self.lv)
        return row is not None and row.partial == self.negated

    def ansible(self, r: str = "r") -> Ansible:
        partial = f"({r}.stdout | trim)[8:9] == 'p'"
        wanted = partial if self.negated else f"not {partial}"
        return Ansible(("lvs", "--noheadings", "-o", "lv_attr", self.lv), f"({r}.rc == 0 and {wanted})")


# A forced uncache drops what the cache holds: only for an LV whose cache is on a missing device.
LvPartial = _negation(LvComplete, "lv_partial")


@dataclass(frozen=True)
class _LvColumn(Check):
    """The LV exists and an lvs column of it has (or, negated, has not) a value."""

    column: ClassVar[str]  # the lvs column, also the name of the Lv attribute
    sentences: ClassVar[tuple[str, str]]  # the sentence, and the negated one
    lv: str

    def describe(self) -> str:
        return self.sentences[self.negated].format(lv=self.lv, value=self.expected)

    @property
    def expected(self) -> str:
        return str(getattr(self, fields(self)[1].name))

    def holds(self, system: SystemView) -> bool:
        row = system.lv(self.lv)
        return row is not None and (getattr(row, self.column) == self.expected) != self.negated

    def ansible(self, r: str = "r") -> Ansible:
        op = "!=" if self.negated else "=="
        return Ansible(
            ("lvs", "--noheadings", "-o", self.column, self.lv),
            f"({r}.rc == 0 and ({r}.stdout | trim) {op} {_quoted(self.expected)})",
        )


@dataclass(frozen=True)
class Segtype(_LvColumn):
    kind, column = "segtype", "segtype"
    sentences = ("LV {lv} has segment type {value}", "LV {lv} is not of segment type {value}")
    segtype: str


NotSegtype = _negation(Segtype, "not_segtype")


@dataclass(frozen=True)
class CacheMode(_LvColumn):
    kind, column = "cache_mode", "cache_mode"
    sentences = ("LV {lv} caches in {value} mode", "LV {lv} does not cache in {value} mode")
    mode: str


@dataclass(frozen=True)
class CachePool(_LvColumn):
    """The LV is cached by this cache pool: lvs's pool_lv, which lvm2 2.03 renames POOL_cpool when
    it attaches it (either name holds). What tells a cache made anew (a resize) from the old one."""

    kind, column = "cache_pool", "pool"
    sentences = ("LV {lv} is cached by the pool {value}", "LV {lv} is not cached by the pool {value}")
    pool: str

    def holds(self, system: SystemView) -> bool:
        row = system.lv(self.lv)
        name = self.pool.split("/")[-1]
        return row is not None and (row.pool in (name, f"{name}_cpool")) != self.negated

    def ansible(self, r: str = "r") -> Ansible:
        name = self.pool.split("/")[-1]
        names = ", ".join(_quoted(n) for n in (name, f"{name}_cpool", f"[{name}]", f"[{name}_cpool]"))
        return Ansible(
            ("lvs", "--noheadings", "-o", "pool_lv", self.lv),
            f"({r}.rc == 0 and ({r}.stdout | trim) in [{names}])",
        )


# --- devices ---


@dataclass(frozen=True)
class _OnDevice(Check):
    """A fact about a block device as discovery sees it; never true of a device that is absent."""

    sentence: ClassVar[str]
    device: str

    def describe(self) -> str:
        return self.sentence.format(device=self.device)

    def holds(self, system: SystemView) -> bool:
        dev = system.device(self.device)
        return dev is not None and self.of(dev, system)

    def of(self, dev: Device, system: SystemView) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class NoSignature(_OnDevice):
    kind, sentence = "no_signature", "{device} holds no file system, RAID, LVM or other signature"

    def of(self, dev: Device, system: SystemView) -> bool:
        return dev.signature is None and dev.lvm is None

    def ansible(self, r: str = "r") -> Ansible:
        return Ansible(("blkid", "-p", self.device), f"{r}.rc == 2")  # blkid: 2 = nothing found


@dataclass(frozen=True)
class NotMounted(_OnDevice):
    kind, sentence = "not_mounted", "{device} and its partitions are not mounted or held"

    def of(self, dev: Device, system: SystemView) -> bool:
        partitions = system.partitions(dev)
        return not (dev.mountpoints or dev.swap or dev.holders or any(p.mountpoints or p.holders for p in partitions))

    def ansible(self, r: str = "r") -> Ansible:
        # lsblk lists the device, then its partitions and whatever sits on either: only
        # unmounted partitions may follow an unmounted device.
        return Ansible(
            ("lsblk", "-rno", "TYPE,MOUNTPOINT", self.device),
            f"({r}.rc == 0 and ' ' not in ({r}.stdout_lines[0] | default('') | trim) and "
            f"({r}.stdout_lines[1:] | map('trim') | reject('equalto', 'part') | list | length) == 0)",
        )


@dataclass(frozen=True)
class BcacheSuperblock(_OnDevice):
    kind, sentence = "bcache_sb", "{device} has a bcache superblock"

    def of(self, dev: Device, system: SystemView) -> bool:
        return dev.fs_type == "bcache" or dev.bcache is not None

    def ansible(self, r: str = "r") -> Ansible:
        return Ansible(
            ("blkid", "-p", "-o", "value", "-s", "TYPE", self.device),
            f"({r}.rc == 0 and ({r}.stdout | trim) == 'bcache')",
        )


# --- the initramfs (advisor/health/boot.py) ---

# What each ``needs`` of InitramfsCarries stands for (the image's contents are read on the host
# when the check is evaluated: the module files, and cache_check where lvm2 is told to run it).
INITRAMFS_NEEDS = {
    "": "an initramfs",
    "lvm": "dm-mod and lvm",
    "lvmcache": "dm-mod, lvm, dm-cache, dm-cache-smq and the cache_check lvm2 runs",
    "writecache": "dm-mod, lvm and dm-writecache",
    "bcache": "bcache, udev's 69-bcache.rules and the programs it runs",
}
# The same, as extended regular expressions on an image's listing, for the playbook.
_INITRAMFS_PATTERNS = {
    "lvm": (r"/dm-mod\.ko", r"sbin/lvm$"),
    "lvmcache": (r"/dm-mod\.ko", r"sbin/lvm$", r"/dm-cache\.ko", r"/dm-cache-smq\.ko", r"sbin/cache_check$"),
    "writecache": (r"/dm-mod\.ko", r"sbin/lvm$", r"/dm-writecache\.ko"),
    "bcache": (r"/bcache\.ko", r"udev/rules\.d/69-bcache\.rules$"),
    "raid1": (r"/dm-raid\.ko", r"/raid1\.ko"),
}


@dataclass(frozen=True)
class InitramfsCarries(Check):
    """Every installed kernel has an initramfs that carries what assembling the plan's device at
    boot takes (``needs``: lvm, lvmcache, writecache or bcache, +raid1 for a mirrored pool; ''
    only that the image is there). It verifies the initramfs step after it ran: that step runs
    whenever a run reaches it (advisor.plan.language, ``repeats``)."""

    kind: ClassVar[str] = "initramfs_carries"
    needs: str

    def describe(self) -> str:
        base, *more = self.needs.split("+")
        words = INITRAMFS_NEEDS.get(base, base) + (", dm-raid and raid1" if "raid1" in more else "")
        return f"every installed kernel's initramfs carries {words}"

    def holds(self, system: SystemView) -> bool:
        return not system.initramfs_lacks(self.needs)

    def ansible(self, r: str = "r") -> Ansible:
        base, *more = self.needs.split("+")
        patterns = [p for part in (base, *more) for p in _INITRAMFS_PATTERNS.get(part, ())]
        tests = "".join(f" && printf '%s\\n' \"$l\" | grep -Eq -- '{p}'" for p in patterns)
        script = (
            'n=0; for i in /boot/initrd.img-* /boot/initramfs-*.img; do [ -f "$i" ] || continue; n=$((n+1)); '
            f'l=$(lsinitramfs "$i" 2>/dev/null || lsinitrd "$i") || exit 1; true{tests} || exit 1; done; '
            '[ "$n" -gt 0 ]'
        )
        return Ansible(("sh", "-c", script), f"{r}.rc == 0")


# --- sysfs (bcache) ---


def _alternatives(value: str) -> list[str]:
    return value.split("|")


@dataclass(frozen=True)
class Sysfs(Check):
    """A sysfs file contains the value (or one of ``a|b``)."""

    kind: ClassVar[str] = "sysfs"
    path: str
    value: str

    def describe(self) -> str:
        return f"{self.path} reads {self.value}"

    def holds(self, system: SystemView) -> bool:
        text = system.read_sysfs(self.path)
        return text is not None and any(alt in text for alt in _alternatives(self.value))

    def ansible(self, r: str = "r") -> Ansible:
        alts = " or ".join(f"{_quoted(a)} in {r}.stdout" for a in _alternatives(self.value))
        return Ansible(
            ("cat", _playbook_path(self.path)), f"({r}.rc == 0 and ({alts}))", templated=role_of(self.path) is not None
        )


@dataclass(frozen=True)
class SysfsExists(_Exists):
    kind, subject, lookup = "sysfs_exists", "{path}", ("test", "-e", "{path}")
    path: str

    def found(self, system: SystemView) -> bool:
        return system.sysfs_exists(self.path)


NoSysfs = _negation(SysfsExists, "no_sysfs")


# --- cachewise's tunables file (advisor/tunables.py) ---


def _playbook_file(path: str) -> str:
    """The tunables file for the playbook: the backing device's UUID as the playbook looked it up."""
    return path.replace("{backing-uuid}", "{{ cw_uuid_backing.stdout | trim }}")


def _file_words(path: str) -> str:
    return path.replace("{backing-uuid}", "<the backing device's bcache UUID>")


@dataclass(frozen=True)
class TunablesFile(Check):
    """cachewise's tunables file of the plan's backing device sets exactly these values."""

    kind: ClassVar[str] = "tunables_file"
    file: str
    value: str

    def describe(self) -> str:
        return f"{_file_words(self.file)} sets {self.value}"

    def holds(self, system: SystemView) -> bool:
        return system.read_config(self.file) == self.value

    def ansible(self, r: str = "r") -> Ansible:
        settings = f"({r}.stdout_lines | map('trim') | reject('match', '#') | reject('equalto', '') | join(' '))"
        return Ansible(
            ("cat", _playbook_file(self.file)), f"({r}.rc == 0 and {settings} == {_quoted(self.value)})", True
        )


@dataclass(frozen=True)
class NoTunablesFile(Check):
    """The plan's backing device has no tunables file (any more)."""

    kind: ClassVar[str] = "no_tunables_file"
    file: str

    def describe(self) -> str:
        return f"{_file_words(self.file)} does not exist"

    def holds(self, system: SystemView) -> bool:
        return system.read_config(self.file) is None

    def ansible(self, r: str = "r") -> Ansible:
        return Ansible(("test", "-e", _playbook_file(self.file)), f"{r}.rc != 0", True)
