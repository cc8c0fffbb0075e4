"""Boot readiness: whether a cache comes back after a reboot, as findings with their fixes.

What users of lvmcache and bcache report most is a cache that is not back after a reboot
(docs/boot.md): lvm2 without ``cache_check`` (thin-provisioning-tools; Debian bug 773731,
NixOS#15516), an initramfs without dm-cache or bcache, bcache-tools' udev rules missing, an
fstab naming /dev/bcacheN (renumbered at boot). This module reads what decides it on this
machine into :class:`BootFacts` (:func:`read_facts`) and judges it without reading anything
more:

- :func:`readiness`: every cache of an inventory (``doctor``'s boot source);
- :func:`plan_findings`: one plan's cache (apply's preflight refuses on a critical one, and a
  plan made here carries them all as notes);
- :func:`needs_at_boot`: why a device must be there at boot (mounted at /, /usr, /var, /boot;
  an fstab line without ``nofail``/``noauto``; a crypttab entry; the resume device), and
  whether the initramfs assembles it (/, /usr, resume, crypttab's ``initramfs``);
- :func:`image_lacks`: what an initramfs image lacks of what assembling a cache needs, from its
  listing (``lsinitramfs``/``lsinitrd``), the check the plan's initramfs step is verified by.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor import backends
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import find_device, names_of
from advisor.errors import CachewiseError, shown
from advisor.health.findings import Finding, Fix, sentences
from advisor.inputs import Unreadable, read_bytes
from advisor.plan.canon import initramfs_needs
from advisor.readers import initramfs, lvmconfig
from advisor.readers.fstab import CrypttabEntry, FstabEntry, Skipped, parse_crypttab, parse_fstab, tag
from advisor.readers.initramfs import Listing
from advisor.readers.lvmconfig import Checker
from advisor.runner import CommandRunner, untrusted

# Mounted from a device the boot cannot do without (the rest must be in fstab without nofail).
ESSENTIAL = ("/", "/usr", "/var", "/boot", "/boot/efi", "/efi")
# Mounted by the initramfs itself (initramfs-tools mounts / and /usr; dracut likewise).
BY_INITRAMFS = ("/", "/usr")
# The kernel modules boot readiness asks about (modprobe's spelling).
MODULES = ("dm_mod", "dm_cache", "dm_cache_smq", "dm_writecache", "bcache", "dm_raid", "raid1")
BCACHE_RULE = "69-bcache.rules"
BCACHE_REGISTERS = ("probe-bcache", "bcache-register")  # what the rule runs to register a device
RULE_DIRS = ("etc/udev/rules.d", "usr/lib/udev/rules.d", "lib/udev/rules.d")  # udev's order
UDEV_PROGRAM_DIRS = ("usr/lib/udev", "lib/udev")
# The command that makes every installed kernel's initramfs again, by tool (Debian's first).
INITRAMFS_TOOLS = {
    "update-initramfs": ("update-initramfs", "-u", "-k", "all"),
    "dracut": ("dracut", "--regenerate-all", "--force"),
}
LISTER_OF = {"update-initramfs": "lsinitramfs", "dracut": "lsinitrd"}
THIN_TOOLS = "thin-provisioning-tools"
TEXT_LIMIT = 1 << 20
DEP_LIMIT = 64 << 20
BCACHE_NAME = re.compile(r"/dev/bcache[0-9]+")

sentences(
    {
        "boot-check-missing": "lvm2 cannot check the metadata of {caches} when it activates {them} at boot: "
        "{setting} names {path}, which is not installed",
        "boot-check-untrusted": "lvm2 would run {path} ({setting}) as root to activate {caches}, and it is not a "
        "program root can trust: {why}",
        "boot-check-disabled": "lvm2 activates {caches} without checking {their} metadata: {setting} is empty",
        "boot-check-keeps-flag": "a check that passes does not clear the kernel's needs-check mark on {caches}: "
        "{setting} leaves out --clear-needs-check-flag",
        "boot-lvm-unreadable": "whether lvm2 can activate {caches} at boot is not known: {why}",
        "boot-bcache-rules-missing": "bcache devices do not come back after a reboot: {missing} of bcache-tools "
        "{are} not installed",
        "boot-module-missing": "the kernel {kernel} has no {module} module, so it cannot assemble {caches} when it "
        "boots",
        "boot-no-initramfs-tool": "{subject} is needed at boot ({why}), and neither update-initramfs nor dracut is "
        "installed to make an initramfs that assembles it",
        "boot-image-lacks": "the initramfs {image} lacks {missing}, which assembling {subject} at boot needs ({why})",
        "boot-image-missing": "the kernel {kernel} has no initramfs, and {subject} is needed in one ({why})",
        "boot-image-unlisted": "whether the initramfs {image} assembles {subject} is not known: {why}",
        "boot-module-not-in-initramfs": "the initramfs would not carry {module}, which assembling {subject} at "
        "boot needs ({why}): {tool} adds it only when told to",
        "boot-plan-without-initramfs": "{subject} is needed at boot ({why}), and the plan does not make the "
        "initramfs again",
        "boot-fstab-bcache-name": "{path} line {line} mounts {spec} at {file}, and bcacheN numbers change between "
        "boots",
        "boot-table-unreadable": "{path} could not be read, so whether a cache is needed at boot is not known: {why}",
        "boot-table-line-skipped": "{path} line {line} is no entry cachewise can read ({why}), so a device it names "
        "is not known to be needed at boot",
    }
)


# --- what is read --------------------------------------------------------------------------


@dataclass(frozen=True)
class Kernel:
    """An installed kernel, with the modules of MODULES it has and its initramfs image."""

    version: str
    modules: frozenset[str]  # loadable (modules.dep)
    builtin: frozenset[str]  # built in (modules.builtin)
    image: str | None  # its initramfs (None: it has none)

    def has(self, module: str) -> bool:
        return module in self.modules or module in self.builtin


@dataclass(frozen=True)
class Program:
    """A program lvm2 or udev runs as root: where it is (None: not installed) and why root
    should not run it (None: it may)."""

    named: str
    found: str | None
    untrusted: str | None = None


@dataclass(frozen=True)
class Table:
    """fstab or crypttab as read: its entries, the lines that are none, and why it could not be
    read at all ('' read; a missing file is an empty table)."""

    path: str
    fstab: tuple[FstabEntry, ...] = ()
    crypttab: tuple[CrypttabEntry, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    problem: str = ""


@dataclass(frozen=True)
class BootFacts:
    """What decides whether caches come back after a reboot on this machine. ``read`` False:
    nothing was read (a saved snapshot, another machine), and nothing is judged."""

    read: bool = False
    lvm_installed: bool = False
    checkers: tuple[Checker, ...] = ()
    programs: Mapping[str, Program] = field(default_factory=dict)  # the checkers', by the path named
    lvm_problem: str = ""  # why lvm2's configuration could not be read
    udev: Mapping[str, str | None] = field(default_factory=dict)  # the rule and its programs -> path
    kernels: tuple[Kernel, ...] = ()
    fstab: Table = Table("/etc/fstab")
    crypttab: Table = Table("/etc/crypttab")
    resume: str = ""  # MAJ:MIN of the resume (hibernation) device
    tool: str = ""  # "update-initramfs", "dracut" or "" (none installed)
    lister: str = ""  # "lsinitramfs", "lsinitrd" or ""
    initramfs_adds: frozenset[str] = frozenset()  # modules of MODULES the tool's configuration adds
    listings: Mapping[str, Listing | str] = field(default_factory=dict)  # image -> listing, or why not

    def checker(self, what: str) -> Checker | None:
        return next((c for c in self.checkers if c.what == what), None)

    @property
    def update_argv(self) -> tuple[str, ...]:
        """The command that makes every installed kernel's initramfs again (Debian's when no
        tool is installed: preflight then names the package)."""
        return INITRAMFS_TOOLS.get(self.tool, INITRAMFS_TOOLS["update-initramfs"])


def _text(path: Path, limit: int = TEXT_LIMIT) -> str | None:
    """A file's text (bytes that are not UTF-8 replaced); None when it is not there."""
    if not os.path.lexists(path):
        return None
    return read_bytes(path, limit).decode("utf-8", "replace")


def _table(root: Path, path: str, crypt: bool) -> Table:
    try:
        text = _text(root / path.lstrip("/"))
    except (OSError, Unreadable) as exc:
        return Table(path, problem=str(exc) if isinstance(exc, Unreadable) else (exc.strerror or str(exc)))
    if text is None:
        return Table(path)
    if crypt:
        centries, skipped = parse_crypttab(text)
        return Table(path, crypttab=tuple(centries), skipped=tuple(skipped))
    fentries, skipped = parse_fstab(text)
    return Table(path, fstab=tuple(fentries), skipped=tuple(skipped))


def _module_name(path: str) -> str:
    """modprobe's name of a module file: kernel/drivers/md/dm-cache.ko.xz -> dm_cache."""
    base = path.rsplit("/", 1)[-1]
    base = base.split(".ko", 1)[0] if ".ko" in base else base
    return base.replace("-", "_")


def modules_in(text: str) -> frozenset[str]:
    """The modules of MODULES a modules.dep or modules.builtin lists."""
    names = {_module_name(line.split(":", 1)[0].strip()) for line in text.splitlines() if ".ko" in line}
    return frozenset(names & set(MODULES))


def _kernels(root: Path) -> tuple[Kernel, ...]:
    base = root / "lib/modules"
    try:
        versions = sorted(os.listdir(base))
    except OSError:
        return ()
    out = []
    for version in versions:
        try:
            dep = _text(base / version / "modules.dep", DEP_LIMIT)
            builtin = _text(base / version / "modules.builtin", DEP_LIMIT) or ""
        except (OSError, Unreadable):
            continue
        if dep is None:  # a directory left behind by a removed kernel
            continue
        images = (f"boot/initrd.img-{version}", f"boot/initramfs-{version}.img")
        image = next((f"/{i}" for i in images if (root / i).is_file()), None)
        out.append(Kernel(version, modules_in(dep), modules_in(builtin), image))
    return tuple(out)


def rule_programs(rule: str) -> tuple[str, ...]:
    """The programs a udev rule runs (RUN+= and IMPORT{program}=), in order, once each."""
    found = re.findall(r'(?:RUN\+?|IMPORT\{program\})\s*\+?=\s*"([^"\s]+)', rule)
    return tuple(dict.fromkeys(p for p in found if not p.startswith("/") or p.startswith("/lib/udev")))


def _udev(root: Path) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    rule_path = next((f"/{d}/{BCACHE_RULE}" for d in RULE_DIRS if (root / d / BCACHE_RULE).is_file()), None)
    out[BCACHE_RULE] = rule_path
    programs: Sequence[str] = BCACHE_REGISTERS
    if rule_path is not None:
        try:
            programs = rule_programs(_text(root / rule_path.lstrip("/")) or "")
        except (OSError, Unreadable):
            pass
    for program in programs:
        name = program.rsplit("/", 1)[-1]
        out[name] = next((f"/{d}/{name}" for d in UDEV_PROGRAM_DIRS if (root / d / name).is_file()), None)
    return out


def _program(named: str, runner: CommandRunner, root: Path) -> Program:
    """Where lvm2 finds a program it runs by this name (a bare name on the system's PATH), and
    whether root may run it."""
    found = str(root / named.lstrip("/")) if named.startswith("/") else runner.which(named)
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        return Program(named, None)
    return Program(named, found, untrusted(found))


def _initramfs_adds(root: Path) -> frozenset[str]:
    """The modules of MODULES initramfs-tools is told to add: named in its modules file or a
    modules.d file, or by a hook (manual_add_modules)."""
    texts: list[str] = []
    for d in (
        "etc/initramfs-tools",
        "usr/share/initramfs-tools/modules.d",
        "etc/initramfs-tools/hooks",
        "usr/share/initramfs-tools/hooks",
    ):
        at = root / d
        files = [at / "modules"] if d == "etc/initramfs-tools" else (sorted(at.iterdir()) if at.is_dir() else [])
        for f in files:
            try:
                texts.append(_text(f) or "")
            except (OSError, Unreadable):
                continue
    words = {w.replace("-", "_") for t in texts for line in t.splitlines() for w in line.split("#", 1)[0].split()}
    return frozenset(words & set(MODULES))


def read_facts(runner: CommandRunner, *, images: bool = False, root: Path = Path("/")) -> BootFacts:
    """This machine's boot facts (``images``: list every initramfs too, which takes a second or
    so an image). ``root``: where the files are looked for (tests give a tree of their own)."""
    checkers: tuple[Checker, ...] = ()
    problem = ""
    installed = runner.which("lvmconfig") is not None
    if installed:
        try:
            checkers = tuple(lvmconfig.read(runner).values())
        except CachewiseError as exc:
            problem = exc.what
    programs = {c.executable: _program(c.executable, runner, root) for c in checkers if c.executable}
    tool = next((t for t in INITRAMFS_TOOLS if runner.which(t) is not None), "")
    lister = next((t for t in initramfs.LISTERS if runner.which(t) is not None), "")
    if tool and runner.which(LISTER_OF[tool]) is not None:
        lister = LISTER_OF[tool]
    kernels = _kernels(root)
    listings: dict[str, Listing | str] = {}
    if images and lister:
        for k in kernels:
            if k.image is not None:
                try:
                    listings[k.image] = initramfs.list_image(runner, lister, k.image)
                except CachewiseError as exc:
                    listings[k.image] = exc.what
    try:
        resume = (_text(root / "sys/power/resume", 64) or "").strip()
    except (OSError, Unreadable):
        resume = ""
    return BootFacts(
        read=True,
        lvm_installed=installed,
        checkers=checkers,
        programs=programs,
        lvm_problem=problem,
        udev=_udev(root),
        kernels=kernels,
        fstab=_table(root, "/etc/fstab", crypt=False),
        crypttab=_table(root, "/etc/crypttab", crypt=True),
        resume="" if resume in ("", "0:0") else resume,
        tool=tool,
        lister=lister,
        initramfs_adds=_initramfs_adds(root) if tool == "update-initramfs" else frozenset(),
        listings=listings,
    )


# --- what needs a device at boot -------------------------------------------------------------


@dataclass(frozen=True)
class Need:
    """Why a device must be there at boot, and whether the initramfs is what assembles it."""

    why: str
    initramfs: bool


class Resolver:
    """The devices fstab and crypttab sources name (UUID=, LABEL=, PARTUUID=, PARTLABEL=, ID=
    or a path), each source resolved once: a table can hold thousands of lines."""

    def __init__(self, inv: Inventory) -> None:
        self.inv = inv
        self.names: dict[str, Device] = {}
        for d in inv.devices:
            for name in names_of(d):
                self.names.setdefault(name, d)
            if d.fs_uuid:
                self.names.setdefault(f"UUID={d.fs_uuid.lower()}", d)
            if d.fs_label:
                self.names.setdefault(f"LABEL={d.fs_label}", d)
        self.seen: dict[str, Device | None] = {}

    def __call__(self, spec: str) -> Device | None:
        if spec not in self.seen:
            self.seen[spec] = self._resolve(spec)
        return self.seen[spec]

    def _resolve(self, spec: str) -> Device | None:
        t = tag(spec)
        if t is not None:
            name, value = t
            key = f"UUID={value.lower()}" if name == "UUID" else f"{name}={value}"
            return self.names.get(key) or self.names.get(f"/dev/disk/by-{name.lower()}/{value}")
        if not spec.startswith("/dev/") or ".." in spec.split("/"):
            return None
        # a name the scan listed, else the device this machine's node or link leads to
        return self.names.get(spec) or find_device(self.inv, spec)


def resolve(inv: Inventory, spec: str) -> Device | None:
    """The device an fstab or crypttab source names; None when it is none of the inventory's."""
    return Resolver(inv)(spec)


def stack(inv: Inventory, dev: Device) -> list[Device]:
    """``dev`` and every device built on it (its holders, theirs, ...)."""
    out: list[Device] = []
    todo = [dev]
    while todo:
        d = todo.pop(0)
        if any(d.name == o.name for o in out):
            continue
        out.append(d)
        todo += [h for h in (inv.by_name(n) for n in d.holders) if h is not None]
    return out


def _named(d: Device) -> str:
    return shown(d.display_path)


def needs_at_boot(inv: Inventory, dev: Device, facts: BootFacts) -> list[Need]:
    """Why ``dev`` (or a device built on it) must be there at boot; empty: the boot goes on
    without it."""
    on = stack(inv, dev)
    names = {d.name for d in on}
    out: list[Need] = []
    mounted = {mp for d in on for mp in d.mountpoints}
    for d in on:
        essential = [mp for mp in d.mountpoints if mp in ESSENTIAL]
        out += [Need(f"{mp} is mounted from {_named(d)}", mp in BY_INITRAMFS) for mp in essential]
        if facts.resume and d.devnum == facts.resume:
            out.append(Need(f"the kernel resumes from hibernation from {_named(d)}", True))
    resolve = Resolver(inv)
    for e in facts.fstab.fstab:
        hit = resolve(e.spec)
        if hit is None or hit.name not in names or e.optional or (e.file in mounted and e.file in ESSENTIAL):
            continue
        where = "as swap" if e.swap else f"at {shown(e.file)}"
        initrd = e.file in BY_INITRAMFS or e.has("x-initrd.mount")
        out.append(Need(f"{facts.fstab.path} line {e.line} mounts {shown(e.spec)} {where} without nofail", initrd))
    for c in facts.crypttab.crypttab:
        hit = resolve(c.source)
        if hit is None or hit.name not in names or c.optional:
            continue
        why = f"{facts.crypttab.path} line {c.line} opens {shown(c.source)} as {shown(c.name)}"
        out.append(Need(why, c.has("initramfs")))
    return list(dict.fromkeys(out))


def in_initramfs(needs: Iterable[Need]) -> list[Need]:
    return [n for n in needs if n.initramfs]


# --- what an initramfs must carry --------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One thing an image must carry: a module (by modprobe's name) or a file (a path relative
    to the image's root)."""

    label: str
    module: str = ""
    path: str = ""


def _usr(path: str) -> str:
    """A path with /usr merged away (usr/sbin/lvm and sbin/lvm are one file on Debian 12)."""
    path = path.strip("/")
    return path[4:] if path.startswith("usr/") else path


def items_for(needs: str, facts: BootFacts) -> list[Item]:
    """What an image must carry to assemble a device of ``needs`` (the plan language's token:
    lvm, lvmcache, writecache or bcache, with +raid1 for a mirrored pool)."""
    parts = needs.split("+")
    out: list[Item] = []
    if parts[0] in ("lvm", "lvmcache", "writecache"):
        out += [Item("dm-mod.ko", module="dm_mod"), Item("lvm", path="sbin/lvm")]
    if parts[0] == "lvmcache":
        out += [Item("dm-cache.ko", module="dm_cache"), Item("dm-cache-smq.ko", module="dm_cache_smq")]
        checker = facts.checker("cache")
        if checker is not None and not checker.disabled:
            exe = checker.executable
            out.append(Item(exe.rsplit("/", 1)[-1], path=exe if exe.startswith("/") else f"sbin/{exe}"))
    if parts[0] == "writecache":
        out.append(Item("dm-writecache.ko", module="dm_writecache"))
    if parts[0] == "bcache":
        out += [Item("bcache.ko", module="bcache"), Item(BCACHE_RULE, path=f"lib/udev/rules.d/{BCACHE_RULE}")]
        runs = [p for p in BCACHE_REGISTERS if p in facts.udev] or list(BCACHE_REGISTERS)
        out += [Item(p, path=f"lib/udev/{p}") for p in runs]
    if "raid1" in parts[1:]:
        out += [Item("dm-raid.ko", module="dm_raid"), Item("raid1.ko", module="raid1")]
    return out


def carried(listing: Listing, item: Item, kernel: Kernel | None) -> bool:
    if item.module:
        if kernel is not None and item.module in kernel.builtin:
            return True
        return any(_module_name(p) == item.module for p in listing.paths if ".ko" in p.rsplit("/", 1)[-1])
    want = _usr(item.path)
    return any(_usr(p) == want for p in listing.paths)


@dataclass(frozen=True)
class Lack:
    """What one kernel's initramfs lacks (``image`` None: the kernel has none; ``why``: the
    image could not be listed)."""

    kernel: str
    image: str | None
    missing: tuple[str, ...] = ()
    why: str = ""

    def words(self) -> str:
        if self.image is None:
            return f"the kernel {self.kernel} has no initramfs"
        if self.why:
            return f"{self.image} could not be listed: {self.why}"
        return f"{self.image} lacks {', '.join(self.missing)}"


def image_lacks(needs: str, facts: BootFacts) -> list[Lack]:
    """What each installed kernel's initramfs lacks of what assembling a device of ``needs``
    takes (empty: every image carries it). Images are judged from ``facts.listings``."""
    items = items_for(needs, facts)
    out: list[Lack] = []
    for k in facts.kernels:
        if k.image is None:
            out.append(Lack(k.version, None))
            continue
        listing = facts.listings.get(k.image)
        if listing is None:
            out.append(Lack(k.version, k.image, why=f"there is no {facts.lister or 'lsinitramfs'} to list it with"))
        elif isinstance(listing, str):
            out.append(Lack(k.version, k.image, why=listing))
        else:
            missing = tuple(i.label for i in items if not carried(listing, i, k))
            if missing:
                out.append(Lack(k.version, k.image, missing))
    return out


# --- judging ---------------------------------------------------------------------------------


def _them(caches: Sequence[str]) -> dict[str, str]:
    one = len(caches) == 1
    return {"caches": ", ".join(caches), "them": "it" if one else "them", "their": "its" if one else "their"}


def _fix_command(how: str, command: Sequence[str]) -> Fix:
    return Fix(how, command=tuple(command))


def checker_findings(facts: BootFacts, what: str, caches: Sequence[str], subject: str) -> list[Finding]:
    """Whether lvm2 can run its ``what`` ("cache" or "thin") metadata checker at activation."""
    if not facts.read or not caches or not facts.lvm_installed:
        return []
    words = _them(caches)
    if facts.lvm_problem:
        return [
            Finding(
                "boot-lvm-unreadable",
                "warning",
                subject,
                {**words, "why": facts.lvm_problem},
                "lvm2's configuration says which program checks a cache's metadata before activation",
                Fix("fix the configuration lvmconfig names (lvm.conf or lvmlocal.conf under /etc/lvm)"),
            )
        ]
    checker = facts.checker(what)
    if checker is None:
        return []
    if checker.disabled:
        return [
            Finding(
                "boot-check-disabled",
                "warning",
                subject,
                {**words, "setting": f"global/{checker.setting}"},
                "with an empty setting lvm2 skips the check: metadata damaged by a crash or a failing SSD is not "
                "caught before the cache is used, and a cache the kernel marked as needing a check stays read-only "
                "until the check is run by hand",
                Fix(
                    f"remove the setting from /etc/lvm/lvm.conf to use lvm2's default, or set it to "
                    f'"/usr/sbin/{what}_check" ({THIN_TOOLS})'
                ),
            )
        ]
    program = facts.programs.get(checker.executable)
    facts_of = {**words, "setting": f"global/{checker.setting}", "path": shown(checker.executable)}
    out: list[Finding] = []
    if program is None or program.found is None:
        out.append(
            Finding(
                "boot-check-missing",
                "critical",
                subject,
                facts_of,
                f"lvm2 runs {what}_check on the metadata before it activates a {what}; when the program is missing, "
                "lvm2 2.02.178 and later activate it unchecked with a warning, older lvm2 refuses to activate it "
                "(Debian bug 773731), and one the kernel marked as needing a check stays read-only",
                _fix_command(f"install {THIN_TOOLS}", ("apt-get", "install", THIN_TOOLS))
                if checker.executable in (f"/usr/sbin/{what}_check", f"/sbin/{what}_check", f"{what}_check")
                else Fix(
                    f'set {checker.setting} to "/usr/sbin/{what}_check" in /etc/lvm/lvm.conf, and install {THIN_TOOLS}'
                ),
            )
        )
    elif program.untrusted:
        out.append(
            Finding(
                "boot-check-untrusted",
                "critical",
                subject,
                {**facts_of, "why": program.untrusted},
                "another user who can change it would run code as root at every activation",
                Fix(
                    f"make {shown(program.found)} and its folders root's alone (chown root, chmod go-w), or reinstall "
                    f"{THIN_TOOLS}"
                ),
            )
        )
    if what == "cache" and "--clear-needs-check-flag" not in checker.options:
        out.append(
            Finding(
                "boot-check-keeps-flag",
                "warning",
                subject,
                {**words, "setting": "global/cache_check_options"},
                "the kernel keeps a cache marked as needing a check read-only until the check clears the mark",
                Fix('add "--clear-needs-check-flag" to cache_check_options in /etc/lvm/lvm.conf'),
            )
        )
    return out


def bcache_rule_findings(facts: BootFacts, subject: str) -> list[Finding]:
    if not facts.read:
        return []
    missing = [name for name, path in facts.udev.items() if path is None]
    if not missing:
        return []
    return [
        Finding(
            "boot-bcache-rules-missing",
            "critical",
            subject,
            {"missing": " and ".join(missing), "are": "is" if len(missing) == 1 else "are"},
            "bcache-tools' udev rule registers each bcache device with the kernel as udev finds it at boot; "
            "without it (and the programs it runs) no /dev/bcacheN appears and nothing on one is mounted",
            _fix_command("install bcache-tools", ("apt-get", "install", "--reinstall", "bcache-tools")),
        )
    ]


def module_findings(facts: BootFacts, modules: Sequence[str], caches: Sequence[str], subject: str) -> list[Finding]:
    out = []
    for k in facts.kernels:
        for m in modules:
            if not k.has(m):
                out.append(
                    Finding(
                        "boot-module-missing",
                        "critical",
                        subject,
                        {"kernel": k.version, "module": m.replace("_", "-"), **_them(caches)},
                        "the device-mapper target or bcache driver is a kernel module the kernel loads when the "
                        "cache is assembled",
                        Fix(f"install the modules of the kernel {k.version}, or boot a kernel that has {m}"),
                    )
                )
    return out


def update_fix(facts: BootFacts) -> Fix:
    argv = facts.update_argv
    return _fix_command(f"make the initramfs again ({shlex.join(argv)})", argv)


def image_findings(facts: BootFacts, needs: str, subject: str, why: Sequence[Need]) -> list[Finding]:
    """What the images lack of what assembling ``subject`` (needed in the initramfs for
    ``why``) takes."""
    reasons = "; ".join(n.why for n in why)
    if not facts.tool:
        return [
            Finding(
                "boot-no-initramfs-tool",
                "critical",
                subject,
                {"why": reasons},
                "the initramfs assembles the devices / and /usr are on before the system can start",
                _fix_command("install initramfs-tools", ("apt-get", "install", "initramfs-tools")),
            )
        ]
    out = []
    for lack in image_lacks(needs, facts):
        if lack.image is None:
            out.append(
                Finding(
                    "boot-image-missing",
                    "critical",
                    subject,
                    {"kernel": lack.kernel, "why": reasons},
                    "",
                    update_fix(facts),
                )
            )
        elif lack.why:
            out.append(
                Finding(
                    "boot-image-unlisted",
                    "warning",
                    subject,
                    {"image": lack.image, "why": lack.why},
                    "",
                    update_fix(facts),
                )
            )
        else:
            fix = update_fix(facts)
            lacking_modules = [m for m in ("dm-writecache.ko",) if m in lack.missing]
            if lacking_modules and facts.tool == "update-initramfs" and "dm_writecache" not in facts.initramfs_adds:
                fix = Fix(
                    "add the line dm-writecache to /etc/initramfs-tools/modules, then run update-initramfs -u -k all"
                )
            out.append(
                Finding(
                    "boot-image-lacks",
                    "critical",
                    subject,
                    {"image": lack.image, "missing": ", ".join(lack.missing), "why": reasons},
                    "the initramfs assembles the devices / and /usr are on (and the resume device) before the system "
                    "can start, with only what it carries",
                    fix,
                )
            )
    return out


def fstab_findings(inv: Inventory | None, facts: BootFacts) -> list[Finding]:
    """An fstab line naming /dev/bcacheN, with the UUID= line to use instead; the tables that
    could not be read, and their lines that are no entries."""
    out: list[Finding] = []
    for table in (facts.fstab, facts.crypttab):
        if table.problem:
            out.append(
                Finding("boot-table-unreadable", "warning", table.path, {"path": table.path, "why": table.problem})
            )
        out += [
            Finding("boot-table-line-skipped", "info", table.path, {"path": table.path, "line": s.line, "why": s.why})
            for s in table.skipped
        ]
    for e in facts.fstab.fstab:
        if not BCACHE_NAME.fullmatch(e.spec):
            continue
        dev = find_device(inv, e.spec) if inv is not None else None
        uuid = dev.fs_uuid if dev is not None else None
        fields = (f"UUID={uuid}" if uuid else "UUID=<its UUID>", e.file, e.vfstype, ",".join(e.options))
        line = (
            " ".join(f.replace(" ", "\\040").replace("\t", "\\011") for f in fields)
            + " 0 "
            + ("1" if e.file == "/" else "2")
        )
        how = f"name it by its file system's UUID: {line}" + ("" if uuid else f" (blkid -s UUID {e.spec} shows it)")
        out.append(
            Finding(
                "boot-fstab-bcache-name",
                "warning",
                e.spec,
                {
                    "path": facts.fstab.path,
                    "line": e.line,
                    "spec": shown(e.spec),
                    "file": shown(e.file),
                    "uuid": uuid or "",
                },
                "the kernel numbers bcache devices in the order it registers them, which changes with the order "
                "disks appear at boot: the line may mount another bcache device, or none",
                Fix(how),
            )
        )
    return out


# --- a plan's cache, and every cache of a machine -----------------------------------------------


def modules_of(backend_id: str) -> tuple[str, ...]:
    """The kernel modules assembling a cache of this backend takes (device-mapper's own too)."""
    b = backends.backend(backend_id)
    return (("dm_mod",) if b.lvm_segtype else ()) + b.kernel_modules


def plan_findings(
    facts: BootFacts,
    inv: Inventory,
    *,
    subject: str,
    target: Device | None,
    backend: str,
    effect: str,
    updates_initramfs: bool,
    mirrored: bool = False,
) -> list[Finding]:
    """Boot readiness of the cache a plan makes, changes or removes: whether lvm2 could activate
    it at the next boot (makes and changes), bcache's udev rule and the kernels' modules (makes),
    and, for a device needed at boot, whether the plan makes the initramfs again and whether
    the initramfs would carry dm-writecache. Critical findings are preflight's refusals."""
    if not facts.read:
        return []
    out: list[Finding] = []
    if backend == "lvmcache" and effect in ("makes", "changes"):
        out += checker_findings(facts, "cache", [subject], subject)
    if backend == "bcache" and effect == "makes":
        out += bcache_rule_findings(facts, subject)
    if effect == "makes":
        modules = modules_of(backend) + (("dm_raid", "raid1") if mirrored else ())
        out += module_findings(facts, modules, [subject], subject)
    if target is not None and effect in ("makes", "removes"):
        needs = needs_at_boot(inv, target, facts)
        reasons = "; ".join(n.why for n in needs)
        if needs and not updates_initramfs:
            out.append(
                Finding(
                    "boot-plan-without-initramfs",
                    "critical",
                    subject,
                    {"why": reasons},
                    "a plan made on this machine ends by making the initramfs again for a device needed at boot",
                    Fix("make the plan again on this machine"),
                )
            )
        early = in_initramfs(needs)
        if early and backend == "lvmcache-writecache" and effect == "makes" and facts.tool == "update-initramfs":
            builtin = bool(facts.kernels) and all("dm_writecache" in k.builtin for k in facts.kernels)
            if not builtin and "dm_writecache" not in facts.initramfs_adds:
                out.append(
                    Finding(
                        "boot-module-not-in-initramfs",
                        "critical",
                        subject,
                        {"module": "dm-writecache", "why": "; ".join(n.why for n in early), "tool": "initramfs-tools"},
                        "initramfs-tools' lvm2 hook adds dm-mod, dm-snapshot, dm-mirror and dm-raid, and "
                        "MODULES=most adds dm-cache but not dm-writecache (Debian 12)",
                        Fix("add the line dm-writecache to /etc/initramfs-tools/modules"),
                    )
                )
    if backend == "bcache":
        out += [f for f in fstab_findings(inv, facts) if f.code == "boot-fstab-bcache-name"]
    return out


def _caches(inv: Inventory) -> tuple[dict[str, list[Device]], list[str]]:
    """The cached devices of each backend (the cached LV; bcache's backing device), and the
    thin pools."""
    by: dict[str, list[Device]] = {b.id: [] for b in backends.BACKENDS}
    thin: list[str] = []
    for d in inv.devices:
        if d.lvm is not None and d.lvm.role == "lv":
            if d.lvm.segtype == "cache":
                by["lvmcache"].append(d)
            elif d.lvm.segtype == "writecache":
                by["lvmcache-writecache"].append(d)
            elif d.lvm.segtype == "thin-pool":
                thin.append(f"{d.lvm.vg}/{d.lvm.lv}")
        elif d.bcache is not None and d.bcache.role == "backing":
            by["bcache"].append(d)
    return by, thin


def cache_name(d: Device) -> str:
    if d.lvm is not None and d.lvm.vg and d.lvm.lv:
        return f"{d.lvm.vg}/{d.lvm.lv}"
    if d.bcache is not None and d.bcache.bcache_device:
        return d.bcache.bcache_device
    return d.display_path


def readiness(inv: Inventory | None, facts: BootFacts) -> list[Finding]:
    """Whether every cache of this machine comes back after a reboot: lvm2's metadata checkers
    for its cached LVs and thin pools, bcache's udev rule, the installed kernels' modules, the
    initramfs of each kernel for a cache needed in it (when ``facts`` holds the listings), and
    fstab lines naming /dev/bcacheN."""
    if not facts.read:
        return []
    out = fstab_findings(inv, facts)
    if inv is None:
        return out
    by, thin = _caches(inv)
    lvmcaches = [cache_name(d) for d in by["lvmcache"]]
    out += checker_findings(facts, "cache", lvmcaches, "lvm2")
    out += checker_findings(facts, "thin", thin, "lvm2")
    if by["bcache"]:
        out += bcache_rule_findings(facts, "bcache")
    for backend, devices in by.items():
        if devices:
            names = [cache_name(d) for d in devices]
            out += module_findings(facts, modules_of(backend), names, ", ".join(names))
        for d in devices:
            early = in_initramfs(needs_at_boot(inv, d, facts))
            # The images are judged when they were listed (read_facts(images=True)), or when
            # there is nothing to list.
            judged = facts.listings or not facts.tool or any(k.image is None for k in facts.kernels)
            if early and judged:
                out += image_findings(facts, initramfs_needs(backend, "makes", _mirrored(inv, d)), cache_name(d), early)
    return out


def _mirrored(inv: Inventory, d: Device) -> bool:
    """Whether the cache of an LV is on raid1 sub-LVs (a mirrored pool), as far as the
    inventory shows hidden LVs."""
    if d.lvm is None or not d.lvm.lv:
        return False
    return any(
        o.lvm is not None
        and o.lvm.vg == d.lvm.vg
        and o.lvm.segtype == "raid1"
        and (o.lvm.lv or "").startswith(f"{d.lvm.lv}_c")
        for o in inv.devices
    )


def sentence(f: Finding) -> str:
    """A finding with its fix, in one sentence (preflight's refusal, a plan's note)."""
    fix = f.fix
    if fix is None:
        return f.what
    command = f" ({shlex.join(fix.command)})" if fix.command and shlex.join(fix.command) not in fix.how else ""
    return f"{f.what}; {fix.how}{command}"
