"""Boot readiness (issue 29): every finding from the outputs of the host's real lvm2, lsinitramfs
and lsinitrd (tests/fixtures/host-boot/), fstab and crypttab against hostile files, the plan with
and without its initramfs step (the plan language, its checks, the run, the playbook), and
preflight's refusals, each one sentence with its fix."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from advisor.apply.preflight import preflight
from advisor.apply.run import ApplyError, apply
from advisor.apply.state import LiveState, in_effect, wholly_in_effect
from advisor.disks.collect import RawSystem
from advisor.disks.devices import Device, Inventory
from advisor.disks.discovery import build_inventory
from advisor.health import boot
from advisor.health.boot import BootFacts, Kernel, Program, Table
from advisor.plan.checks import InitramfsCarries
from advisor.plan.language import PlanError
from advisor.plan.model import Plan
from advisor.readers import fstab, initramfs, lvmconfig
from advisor.runner import CommandResult
from cachewise.core.backends import ReplayDiscovery
from cachewise.core.context import Core
from cachewise.core.plans import make
from recipes.ansible import playbook
from recipes.bcache import bcache_create, bcache_detach
from recipes.boot import with_boot
from recipes.lvmcache import AttachOptions, CacheSpec, UncacheOptions, lvmcache_attach
from recipes.writecache import WritecacheSpec, writecache_attach
from tests.conftest import FIXTURES
from tests.unit.test_execute import FakeLvm

HOST = FIXTURES / "host-boot"
LAB = build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))
LAYERS = build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json"))
MIRRORED = build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-degraded.json"))
WRITECACHE = build_inventory(RawSystem.load(FIXTURES / "lab-caches" / "raw-writecache.json"))
VERSION = "6.1.0-56-amd64"
IMAGE = f"/boot/initrd.img-{VERSION}"
RULE = (HOST / "69-bcache.rules").read_text()


def checkers(name: str) -> tuple[lvmconfig.Checker, ...]:
    return tuple(lvmconfig.checkers(lvmconfig.parse((HOST / f"lvmconfig-{name}.txt").read_text())).values())


def kernel(**changes: object) -> Kernel:
    k = Kernel(
        VERSION,
        boot.modules_in((HOST / f"modules.dep-drivers-md-{VERSION}").read_text()),
        boot.modules_in((HOST / f"modules.builtin-{VERSION}").read_text()),
        IMAGE,
    )
    return dataclasses.replace(k, **changes)  # type: ignore[arg-type]


def listing(name: str = "debian12", drop: str = "") -> initramfs.Listing:
    """A listing captured from the host's image (``drop``: without the lines holding it, an image
    made without that package's hook)."""
    paths = initramfs.parse_lsinitramfs((HOST / f"lsinitramfs-{name}.txt").read_text())
    return initramfs.Listing(IMAGE, frozenset(p for p in paths if not drop or drop not in p))


def installed(*paths: str) -> dict[str, Program]:
    return {p: Program(p, p) for p in paths}


def facts(**changes: object) -> BootFacts:
    """This host as captured: lvm2 2.03.16 with thin-provisioning-tools, bcache-tools 1.0.8,
    initramfs-tools 0.142 and its image of the 6.1 kernel (MODULES=most)."""
    udev = {"69-bcache.rules": "/usr/lib/udev/rules.d/69-bcache.rules"}
    udev |= {p: f"/usr/lib/udev/{p}" for p in boot.rule_programs(RULE)}
    base = BootFacts(
        read=True,
        lvm_installed=True,
        checkers=checkers("default"),
        programs=installed("/usr/sbin/cache_check", "/usr/sbin/thin_check"),
        udev=udev,
        kernels=(kernel(),),
        tool="update-initramfs",
        lister="lsinitramfs",
        initramfs_adds=frozenset({"dm_mod", "dm_raid", "raid1", "dm_cache", "dm_cache_smq", "bcache"}),
        listings={IMAGE: listing()},
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def with_table(text: str, crypt: bool = False, **changes: object) -> BootFacts:
    if crypt:
        entries, skipped = fstab.parse_crypttab(text)
        return facts(crypttab=Table("/etc/crypttab", crypttab=tuple(entries), skipped=tuple(skipped)), **changes)
    fentries, fskipped = fstab.parse_fstab(text)
    return facts(fstab=Table("/etc/fstab", fstab=tuple(fentries), skipped=tuple(fskipped)), **changes)


def mounted(inv: Inventory, name: str, *mountpoints: str) -> Inventory:
    """The inventory with the device ``name`` mounted there (the lab's root is not on a cache)."""
    devices = tuple(dataclasses.replace(d, mountpoints=mountpoints) if d.name == name else d for d in inv.devices)
    return dataclasses.replace(inv, devices=devices)


def dev(inv: Inventory, name: str) -> Device:
    d = inv.by_name(name)
    assert d is not None
    return d


def codes(found: Sequence[object]) -> list[str]:
    return [f.code for f in found]  # type: ignore[attr-defined]


# --- lvm2's checkers, from lvmconfig's real output ------------------------------------------


def test_lvmconfig_output_is_read_as_lvm2_prints_it() -> None:
    default = {c.what: c for c in checkers("default")}
    assert default["cache"].executable == "/usr/sbin/cache_check"
    assert default["cache"].options == ("-q", "--clear-needs-check-flag")
    assert default["thin"].options == ("-q",)
    assert {c.what: c.disabled for c in checkers("disabled")} == {"cache": True, "thin": False}
    nowhere = {c.what: c for c in checkers("nowhere")}
    assert nowhere["cache"].options == ("-q",), "lvm2 prints an array of one string as the string"
    assert nowhere["thin"].executable == "/opt/thin tools/thin_check"
    weird = {c.what: c for c in checkers("weird")}
    assert weird["cache"].executable == '/usr/sbin/cache_check"x' and "a b" in weird["cache"].options


@pytest.mark.parametrize("text", ["cache_check_executable", 'x="unterminated', "a=[1,2", "a=1 2", "=1", "a b=1"])
def test_lvmconfig_output_that_is_no_setting_is_refused_in_a_sentence(text: str) -> None:
    with pytest.raises(lvmconfig.LvmConfigError) as err:
        lvmconfig.parse(text)
    assert "\n" not in str(err.value) and str(err.value).startswith("lvmconfig printed")


class Answers:
    """A runner that answers each program with a captured output (stdout, stderr, exit code)."""

    def __init__(self, answers: dict[str, tuple[str, str, int]], tools: Sequence[str] = ()) -> None:
        self.answers, self.tools = answers, set(tools) | set(answers)
        self.ran: list[tuple[str, ...]] = []

    def which(self, tool: str) -> str | None:
        return f"/usr/sbin/{tool}" if tool in self.tools else None

    def run(self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True) -> CommandResult:
        self.ran.append(tuple(argv))
        out, err, code = self.answers[argv[0]]
        return CommandResult(tuple(argv), code, out, err, 0.1)


def test_a_broken_lvm_conf_is_a_finding_in_lvm2s_own_words() -> None:
    runner = Answers({"lvmconfig": ("", (HOST / "lvmconfig-bad.stderr").read_text(), 4)})
    with pytest.raises(lvmconfig.LvmConfigError) as err:
        lvmconfig.read(runner)  # type: ignore[arg-type]
    assert "Parse error at byte 37 (line 3): expected a value" in str(err.value)
    found = boot.readiness(LAYERS, facts(lvm_problem=err.value.what))
    assert codes(found) == ["boot-lvm-unreadable"]
    assert "labvg/data, labvg/vault" in found[0].what and "Parse error" in found[0].what


def test_without_any_lvm_conf_lvm2s_built_in_defaults_are_read() -> None:
    """virtme-ng's guest has no /etc/lvm/lvm.conf: `--typeconfig full` then fails ("Cannot clone
    NULL config node"), and lvm2 runs on its defaults, which `--typeconfig default` prints."""

    class NoConf(Answers):
        def run(self, argv: Sequence[str], *, timeout: float | None = None, check: bool = True) -> CommandResult:
            self.ran.append(tuple(argv))
            if argv[2] == "full":
                return CommandResult(tuple(argv), 5, "", (HOST / "lvmconfig-full-no-lvm-conf.err").read_text(), 0.1)
            return CommandResult(tuple(argv), 0, (HOST / "lvmconfig-default-no-lvm-conf.txt").read_text(), "", 0.1)

    runner = NoConf({"lvmconfig": ("", "", 0)})
    found = lvmconfig.read(runner)  # type: ignore[arg-type]
    assert [r[2] for r in runner.ran] == ["full", "default"]
    assert found["cache"].executable == "/usr/sbin/cache_check"
    assert found["cache"].options == ("-q", "--clear-needs-check-flag")
    assert found["thin"].executable == "/usr/sbin/thin_check"


def test_the_checkers_as_configured_each_give_their_finding() -> None:
    assert boot.readiness(LAYERS, facts()) == []
    disabled = boot.readiness(LAYERS, facts(checkers=checkers("disabled")))
    assert codes(disabled) == ["boot-check-disabled"] and disabled[0].severity == "warning"
    assert "lvm2 activates labvg/data, labvg/vault without checking their metadata" in disabled[0].what
    assert "skips the check" in disabled[0].cause
    nowhere = boot.readiness(LAYERS, facts(checkers=checkers("nowhere")))
    assert codes(nowhere) == ["boot-check-missing", "boot-check-keeps-flag"]
    missing = nowhere[0]
    assert missing.severity == "critical" and "/usr/local/sbin/cache_check, which is not installed" in missing.what
    assert "Debian bug 773731" in missing.cause and "2.02.178" in missing.cause
    assert missing.fix is not None and "thin-provisioning-tools" in missing.fix.how
    weird = boot.readiness(LAYERS, facts(checkers=checkers("weird")))
    assert codes(weird) == ["boot-check-missing", "boot-check-keeps-flag"], "a path with a quote is no program"


def test_the_thin_checker_is_judged_only_where_there_is_a_thin_pool() -> None:
    nowhere = facts(checkers=checkers("nowhere"), programs=installed("/usr/local/sbin/cache_check"))
    assert codes(boot.readiness(LAYERS, nowhere)) == ["boot-check-keeps-flag"], "no thin pool: thin_check unasked"
    pool = dataclasses.replace(
        dev(LAB, "dm-1"),
        lvm=dataclasses.replace(dev(LAB, "dm-1").lvm, segtype="thin-pool"),  # type: ignore[arg-type]
    )
    thin = dataclasses.replace(LAB, devices=tuple(pool if d.name == "dm-1" else d for d in LAB.devices))
    found = boot.readiness(thin, nowhere)
    assert codes(found) == ["boot-check-missing"] and "/opt/thin tools/thin_check" in found[0].what
    assert "labvg/data" in found[0].what


def test_a_checker_others_can_change_is_refused(tmp_path: Path) -> None:
    program = tmp_path / "usr/sbin/cache_check"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o777)
    runner = Answers({"lvmconfig": ((HOST / "lvmconfig-default.txt").read_text(), "", 0)})
    read = boot.read_facts(runner, root=tmp_path)  # type: ignore[arg-type]
    found = boot.readiness(LAYERS, read)
    assert "boot-check-untrusted" in codes(found)
    untrusted = next(f for f in found if f.code == "boot-check-untrusted")
    assert "other users can write to" in untrusted.what and untrusted.severity == "critical"
    program.chmod(0o755)
    assert "boot-check-untrusted" not in codes(boot.readiness(LAYERS, boot.read_facts(runner, root=tmp_path)))  # type: ignore[arg-type]


# --- bcache's udev rule and the kernels' modules ---------------------------------------------


def test_the_programs_the_bcache_rule_runs_are_read_from_the_rule() -> None:
    assert boot.rule_programs(RULE) == ("probe-bcache", "bcache-register", "bcache-keep-symlinks")


def test_bcache_without_its_udev_rule_or_programs_does_not_come_back() -> None:
    assert "boot-bcache-rules-missing" not in codes(boot.readiness(LAB, facts()))
    no_rule = facts(udev={**facts().udev, "69-bcache.rules": None, "bcache-register": None})
    found = [f for f in boot.readiness(LAB, no_rule) if f.code == "boot-bcache-rules-missing"]
    assert len(found) == 1 and "69-bcache.rules and bcache-register of bcache-tools are not installed" in found[0].what
    assert found[0].fix is not None and found[0].fix.command[-1] == "bcache-tools"


def test_a_kernel_without_the_cache_module_cannot_assemble_the_cache() -> None:
    old = kernel(version="5.10.0-0-amd64", modules=kernel().modules - {"dm_writecache"}, image=None)
    found = boot.readiness(WRITECACHE, facts(kernels=(kernel(), old)))
    assert codes(found) == ["boot-module-missing"]
    assert "the kernel 5.10.0-0-amd64 has no dm-writecache module" in found[0].what
    built_in = kernel(modules=frozenset(), builtin=frozenset(boot.MODULES))
    assert boot.readiness(WRITECACHE, facts(kernels=(built_in,))) == [], "a module built in is there"


# --- the initramfs, from real listings ----------------------------------------------------------


def test_lsinitramfs_and_lsinitrd_list_the_same_image_alike() -> None:
    ours = initramfs.parse_lsinitramfs((HOST / "lsinitramfs-debian12.txt").read_text())
    dracuts = initramfs.parse_lsinitrd((HOST / "lsinitrd-dracut059-on-debian12.txt").read_text())
    assert ours == dracuts and "usr/sbin/cache_check" in ours and "Image:" not in " ".join(dracuts)


def test_debian_12s_image_carries_dm_cache_and_bcache_but_not_dm_writecache() -> None:
    assert boot.image_lacks("lvmcache", facts()) == []
    assert boot.image_lacks("lvmcache+raid1", facts()) == []
    assert boot.image_lacks("bcache", facts()) == []
    (lack,) = boot.image_lacks("writecache", facts())
    assert lack.missing == ("dm-writecache.ko",) and lack.words() == f"{IMAGE} lacks dm-writecache.ko"
    fixed = facts(listings={IMAGE: listing("debian12-writecache-module")})
    assert boot.image_lacks("writecache", fixed) == [], "the fix (dm-writecache in /etc/initramfs-tools/modules)"


def test_what_an_image_lacks_follows_what_the_host_runs() -> None:
    no_tools = facts(
        listings={
            IMAGE: initramfs.Listing(
                IMAGE,
                frozenset(p for p in listing().paths if not p.endswith(("cache_check", "thin_check", "pdata_tools"))),
            )
        }
    )
    assert [lk.missing for lk in boot.image_lacks("lvmcache", no_tools)] == [("cache_check",)]
    disabled = dataclasses.replace(no_tools, checkers=checkers("disabled"))
    assert boot.image_lacks("lvmcache", disabled) == [], "lvm2 told not to check needs no cache_check"
    elsewhere = facts(checkers=checkers("nowhere"))
    assert [lk.missing for lk in boot.image_lacks("lvmcache", elsewhere)] == [("cache_check",)]
    no_bcache = facts(listings={IMAGE: listing(drop="bcache")})
    assert boot.image_lacks("bcache", no_bcache)[0].missing == (
        "bcache.ko",
        "69-bcache.rules",
        "probe-bcache",
        "bcache-register",
    )


def test_a_kernel_without_an_image_or_an_image_that_cannot_be_listed_is_said() -> None:
    lacks = boot.image_lacks("lvm", facts(kernels=(kernel(image=None),)))
    assert [lk.words() for lk in lacks] == [f"the kernel {VERSION} has no initramfs"]
    unlisted = facts(listings={IMAGE: "lsinitramfs could not list it: not an initramfs"})
    assert "could not be listed: lsinitramfs could not list it" in boot.image_lacks("lvm", unlisted)[0].words()


def test_an_image_is_listed_through_the_runner_and_a_failure_is_a_sentence() -> None:
    ok = Answers({"lsinitramfs": ((HOST / "lsinitramfs-debian12.txt").read_text(), "", 0)})
    assert initramfs.list_image(ok, "lsinitramfs", IMAGE).paths == listing().paths  # type: ignore[arg-type]
    bad = Answers({"lsinitramfs": ("", "cpio: premature end of archive\n", 2)})
    with pytest.raises(initramfs.ListingError, match="lsinitramfs could not list .*: cpio: premature end"):
        initramfs.list_image(bad, "lsinitramfs", IMAGE)  # type: ignore[arg-type]


# --- fstab and crypttab, hostile ones included ----------------------------------------------


def test_fstab_lines_are_read_as_libmount_reads_them() -> None:
    text = (
        "# /etc/fstab: static file system information.\n"
        "UUID=4648cdd9-9cd6-434d-ab70-6bd459df254d / xfs defaults 0 1\n"
        "\t/dev/labvg/data\t/srv/my\\040data  ext4 noatime,nofail 0 2 # a comment libmount ignores\n"
        "LABEL=swap none swap sw\n"
        "/dev/sdc1 /mnt\n"
        "/dev/sdc1 /mnt ext4 defaults x 2\n"
        "PARTUUID='abc' /boot vfat\n"
    )
    entries, skipped = fstab.parse_fstab(text)
    assert [(e.line, e.spec, e.file, e.vfstype) for e in entries] == [
        (2, "UUID=4648cdd9-9cd6-434d-ab70-6bd459df254d", "/", "xfs"),
        (3, "/dev/labvg/data", "/srv/my data", "ext4"),
        (4, "LABEL=swap", "none", "swap"),
        (7, "PARTUUID='abc'", "/boot", "vfat"),
    ]
    assert entries[1].optional and not entries[0].optional and entries[2].swap and entries[3].options == ("defaults",)
    assert [s.line for s in skipped] == [5, 6]
    assert fstab.tag("PARTUUID='abc'") == ("PARTUUID", "abc") and fstab.tag("uuid=x") is None


HOSTILE = [
    "\x00" * 10,
    "/dev/sdb1 / ext4 defaults\x00 0 1",
    "x" * 5000 + " / ext4",
    "\\000 / ext4",
    "UUID= / ext4",
    "/dev/../../etc/passwd / ext4",
    "\udcff\udcfe / ext4",
    "=" * 100 + " / ext4",
    "\n".join(["/dev/sdq /srv ext4 defaults 0 2"] * 20000),
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_tables_never_break_the_check(text: str) -> None:
    for crypt in (False, True):
        read = with_table(text, crypt=crypt)
        for d in LAB.devices:
            boot.needs_at_boot(LAB, d, read)
        found = boot.readiness(LAB, read)
        assert all("\n" not in f.what for f in found)
    assert boot.resolve(LAB, "/dev/../../etc/passwd") is None


def test_a_table_that_cannot_be_read_is_a_finding(tmp_path: Path) -> None:
    runner = Answers({}, tools=())
    nothing = boot.read_facts(runner, root=tmp_path)  # type: ignore[arg-type]
    assert nothing.fstab == Table("/etc/fstab") and nothing.crypttab == Table("/etc/crypttab"), "none is empty"
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/fstab").write_bytes(b"/dev/sdb1 / ext4 defaults 0 1\n" * 50000)  # over 1 MiB
    (tmp_path / "etc/crypttab").mkdir()  # not a file
    read = boot.read_facts(runner, root=tmp_path)  # type: ignore[arg-type]
    found = [f for f in boot.readiness(LAB, read) if f.code.startswith("boot-table")]
    assert codes(found) == ["boot-table-unreadable", "boot-table-unreadable"]
    assert found[0].what.startswith("/etc/fstab could not be read") and found[1].subject == "/etc/crypttab"
    (tmp_path / "etc/fstab").write_bytes(b"/dev/sd\xff1 /srv ext4 defaults 0 2\n/dev/sdb\n")
    read = boot.read_facts(runner, root=tmp_path)  # type: ignore[arg-type]
    assert read.fstab.fstab[0].spec == "/dev/sd\ufffd1" and [s.line for s in read.fstab.skipped] == [2]
    assert "boot-table-line-skipped" in codes(boot.readiness(LAB, read))


def test_crypttab_lines_are_read_as_systemd_reads_them() -> None:
    entries, skipped = fstab.parse_crypttab(
        "vault UUID=c695d83b-2e6a-4695-817b-5846a4b89bc9 none luks,discard\n"
        "swap /dev/sdc2 /dev/urandom swap,cipher=aes-xts-plain64,size=256,noauto\n"
        "bad\n"
        "a/b /dev/sdb none\n"
        "x /dev/sdb none luks extra\n"
    )
    assert [(e.name, e.source, e.options) for e in entries] == [
        ("vault", "UUID=c695d83b-2e6a-4695-817b-5846a4b89bc9", ("luks", "discard")),
        ("swap", "/dev/sdc2", ("swap", "cipher=aes-xts-plain64", "size=256", "noauto")),
    ]
    assert entries[1].optional and [s.line for s in skipped] == [3, 4, 5]


# --- what needs a device at boot ------------------------------------------------------------


def test_a_device_is_needed_at_boot_by_mount_fstab_crypttab_or_resume() -> None:
    data = dev(LAYERS, "dm-0")  # labvg/data, a cached LV with XFS
    assert boot.needs_at_boot(LAYERS, data, facts()) == [], "mounted at /run/lab/data, in no table"
    root = mounted(LAYERS, "dm-0", "/")
    assert boot.needs_at_boot(root, dev(root, "dm-0"), facts()) == [
        boot.Need("/ is mounted from /dev/labvg/data", True)
    ]
    by_uuid = with_table("UUID=4648CDD9-9cd6-434d-ab70-6bd459df254d /srv xfs defaults 0 2\n")
    assert boot.needs_at_boot(LAYERS, data, by_uuid) == [
        boot.Need("/etc/fstab line 1 mounts UUID=4648CDD9-9cd6-434d-ab70-6bd459df254d at /srv without nofail", False)
    ]
    assert boot.needs_at_boot(LAYERS, data, with_table("/dev/mapper/labvg-data /srv xfs nofail 0 2\n")) == []
    assert boot.needs_at_boot(LAYERS, data, with_table("/dev/labvg/data /srv xfs noauto 0 2\n")) == []
    usr = with_table("/dev/mapper/labvg-data /usr xfs defaults 0 2\n")
    assert [n.initramfs for n in boot.needs_at_boot(LAYERS, data, usr)] == [True]
    late = with_table("/dev/labvg/data /srv xfs x-initrd.mount 0 2\n")
    assert [n.initramfs for n in boot.needs_at_boot(LAYERS, data, late)] == [True]
    resume = facts(resume=data.devnum)
    assert boot.needs_at_boot(LAYERS, data, resume)[0].why.startswith("the kernel resumes from hibernation")


def test_a_crypttab_entry_or_a_mount_above_the_cache_makes_it_needed() -> None:
    vault = dev(LAYERS, "dm-4")  # labvg/vault: LUKS on a cached LV, open as /dev/mapper/vault
    crypt = with_table("vault UUID=c695d83b-2e6a-4695-817b-5846a4b89bc9 none luks\n", crypt=True)
    assert boot.needs_at_boot(LAYERS, vault, crypt) == [
        boot.Need("/etc/crypttab line 1 opens UUID=c695d83b-2e6a-4695-817b-5846a4b89bc9 as vault", False)
    ]
    early = with_table("vault /dev/labvg/vault none luks,initramfs\n", crypt=True)
    assert [n.initramfs for n in boot.needs_at_boot(LAYERS, vault, early)] == [True]
    assert boot.needs_at_boot(LAYERS, vault, with_table("vault /dev/labvg/vault none luks,nofail\n", crypt=True)) == []
    above = mounted(LAYERS, "dm-8", "/var")
    assert boot.needs_at_boot(above, dev(above, "dm-4"), facts()) == [
        boot.Need("/var is mounted from /dev/mapper/vault", False)
    ]
    bcache = with_table("/dev/bcache0 /srv ext4 defaults 0 2\n")
    assert [n.why for n in boot.needs_at_boot(LAB, dev(LAB, "sdd"), bcache)] == [
        "/etc/fstab line 1 mounts /dev/bcache0 at /srv without nofail"
    ], "the backing device's bcache0 is in fstab"


# --- findings of a machine: the images of caches needed in the initramfs, fstab's bcacheN ---


def test_a_cache_the_initramfs_assembles_is_judged_on_every_image() -> None:
    root = mounted(WRITECACHE, "dm-0", "/")
    found = boot.readiness(root, facts())
    assert codes(found) == ["boot-image-lacks"]
    lacks = found[0]
    assert lacks.what == (
        f"the initramfs {IMAGE} lacks dm-writecache.ko, which assembling labvg/data at boot needs "
        "(/ is mounted from /dev/labvg/data)"
    )
    assert lacks.fix is not None and "/etc/initramfs-tools/modules" in lacks.fix.how
    fixed = facts(listings={IMAGE: listing("debian12-writecache-module")}, initramfs_adds=frozenset({"dm_writecache"}))
    assert boot.readiness(root, fixed) == []
    cached_root = mounted(MIRRORED, "dm-0", "/")
    no_raid = facts(listings={IMAGE: listing(drop="raid1.ko")})
    (mirror,) = boot.readiness(cached_root, no_raid)
    assert "raid1.ko" in mirror.what, "a mirrored pool needs raid1 in the image"
    no_tool = boot.readiness(root, facts(tool="", lister=""))
    assert codes(no_tool) == ["boot-no-initramfs-tool"]


def test_an_fstab_line_naming_bcacheN_is_a_finding_with_the_uuid_line_to_use() -> None:
    ext4 = dataclasses.replace(dev(LAB, "bcache0"), fs_type="ext4", fs_uuid="0b6a1e22-4c0e-4a43-9d3e-6f8f8bb7f8a1")
    inv = dataclasses.replace(LAB, devices=tuple(ext4 if d.name == "bcache0" else d for d in LAB.devices))
    found = boot.readiness(inv, with_table("/dev/bcache0 /srv ext4 defaults,noatime 0 2\n"))
    assert codes(found) == ["boot-fstab-bcache-name"]
    assert found[0].what == "/etc/fstab line 1 mounts /dev/bcache0 at /srv, and bcacheN numbers change between boots"
    assert found[0].fix is not None
    assert found[0].fix.how == (
        "name it by its file system's UUID: UUID=0b6a1e22-4c0e-4a43-9d3e-6f8f8bb7f8a1 /srv ext4 defaults,noatime 0 2"
    )
    unknown = boot.readiness(LAB, with_table("/dev/bcache7 /srv ext4 defaults 0 2\n"))
    assert unknown[0].fix is not None and "blkid -s UUID /dev/bcache7" in unknown[0].fix.how
    assert boot.readiness(inv, with_table("/dev/bcache/by-uuid/1c3dbe4c-c200-4e7c-adc5-2ed1669faa08 /srv ext4\n")) == []


# --- the plan with and without its initramfs step ----------------------------------------------


def attach_plan(inv: Inventory = LAB) -> Plan:
    return lvmcache_attach(inv, "labvg/data", "nvme0n1", CacheSpec(256 << 20, mode="writeback"))


SRV = "/dev/labvg/data /srv xfs defaults 0 2\n"


def test_a_plan_for_a_device_the_boot_does_not_need_gains_no_step() -> None:
    plan = attach_plan()
    assert with_boot(plan, LAB, facts()).steps == plan.steps
    assert with_boot(plan, LAB, BootFacts()) == plan, "facts not read (a snapshot): the plan as the recipe made it"


def test_a_device_in_fstab_gains_the_initramfs_step_unchecked() -> None:
    plan = with_boot(attach_plan(), LAB, with_table(SRV))
    last = plan.steps[-1]
    assert last.argv == ("update-initramfs", "-u", "-k", "all") and last.post == () and last.undo == ()
    assert last.description == "make the initramfs of every installed kernel again, for the devices as they now are"
    assert not last.destructive
    assert any(
        "is needed at boot (/etc/fstab line 1 mounts /dev/labvg/data at /srv without nofail)" in n for n in plan.notes
    )
    Plan.loads(plan.dumps())  # the plan language and its checks take it


def test_a_device_the_initramfs_assembles_gains_the_step_and_its_check() -> None:
    root = mounted(LAB, "dm-1", "/")
    plan = with_boot(attach_plan(root), root, facts())
    last = plan.steps[-1]
    assert last.post == (InitramfsCarries(needs="lvmcache"),)
    assert last.post[0].describe() == (
        "every installed kernel's initramfs carries dm-mod, lvm, dm-cache, dm-cache-smq and the cache_check lvm2 runs"
    )
    note = next(n for n in plan.notes if "needed at boot" in n)
    assert "dm-mod.ko, lvm, dm-cache.ko, dm-cache-smq.ko, cache_check" in note and "no undo" in note
    assert Plan.loads(plan.dumps()) == plan
    dracut = with_boot(attach_plan(root), root, facts(tool="dracut"))
    assert dracut.steps[-1].argv == ("dracut", "--regenerate-all", "--force")
    Plan.loads(dracut.dumps())


def test_a_removal_of_a_needed_device_makes_the_initramfs_again() -> None:
    root = mounted(LAYERS, "dm-0", "/")
    core = Core(ReplayDiscovery(RawSystem.load(FIXTURES / "lab-caches" / "raw-layers.json")), boot=lambda: facts())
    plan = make(core, root, "lvmcache-uncache", UncacheOptions(lv="labvg/data"))
    assert [s.id for s in plan.steps][-1] == "initramfs" and plan.steps[-1].post == (InitramfsCarries(needs="lvm"),)
    without = make(dataclasses.replace(core, boot=None), root, "lvmcache-uncache", UncacheOptions(lv="labvg/data"))
    assert "initramfs" not in [s.id for s in without.steps]
    made = make(
        core,
        mounted(LAB, "dm-1", "/"),
        "lvmcache-attach",
        AttachOptions(lv="labvg/data", ssd=("nvme0n1",), size=256 << 20),
    )
    assert made.steps[-1].post == (InitramfsCarries(needs="lvmcache"),)


def test_the_plan_language_holds_the_step_to_its_shape_and_checks() -> None:
    root = mounted(LAB, "dm-1", "/")
    data = with_boot(attach_plan(root), root, facts()).to_json()
    data["steps"][-1]["post"] = [{"kind": "initramfs_carries", "args": {"needs": "bcache"}}]
    with pytest.raises(PlanError, match="its postconditions are not the ones its command implies"):
        Plan.from_json(data)
    data["steps"][-1]["post"] = []
    Plan.from_json(data)  # an unchecked step only checks less; it is never skipped
    data["steps"][-1]["argv"] = ["update-initramfs", "-c", "-k", "all"]
    with pytest.raises(PlanError, match="is not a update-initramfs command a cachewise recipe writes"):
        Plan.from_json(data)
    mode = {
        "kind": "lvmcache-mode",
        "title": "t",
        "devices": data["devices"][1:2],
        "steps": [{"id": "initramfs", "argv": ["update-initramfs", "-u", "-k", "all"]}],
    }
    with pytest.raises(PlanError):
        Plan.from_json({**data, **mode})


def test_the_playbook_always_runs_the_step_then_verifies_the_images() -> None:
    root = mounted(LAB, "dm-1", "/")
    plan = with_boot(attach_plan(root), root, facts())
    tasks = playbook(plan)[0]["tasks"]
    last = len(plan.steps) - 1
    done = next(t for t in tasks if f"cw_done_{last}" in t.get("ansible.builtin.set_fact", {}))
    assert done["ansible.builtin.set_fact"][f"cw_done_{last}"] == "{{ false }}"
    run = next(t for t in tasks if t.get("ansible.builtin.command", {}).get("argv", [None])[0] == "update-initramfs")
    assert run["when"] == f"not (cw_done_{last} | bool)"
    assert any(str(t.get("name", "")).startswith(f"verify step {last + 1}: every installed kernel") for t in tasks)


# --- running it -----------------------------------------------------------------------------


def state_with(lvm: FakeLvm, read: BootFacts, plan: Plan | None = None) -> LiveState:
    state = lvm.state()
    state._boot.update({False: read, True: read})
    return state if plan is None else dataclasses.replace(state, plan=plan)


def test_the_step_runs_is_journaled_and_is_verified_on_the_images(tmp_path: Path) -> None:
    root = mounted(LAB, "dm-1", "/")
    lvm = FakeLvm()
    plan = with_boot(attach_plan(root), root, facts())
    journal = apply(plan, lvm, tmp_path, lambda e: None, read_state=lambda: state_with(lvm, facts()))  # type: ignore[arg-type]
    assert lvm.ran[-1] == ("update-initramfs", "-u", "-k", "all")
    assert "initramfs" in [r.get("step") for r in journal.records() if r["event"] == "step-end"]


def test_an_image_that_still_lacks_what_the_device_needs_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("advisor.apply.run.SETTLE_PATIENCE", 0.0)  # nothing will change it meanwhile
    root = mounted(LAB, "dm-1", "/")
    lvm = FakeLvm()
    plan = with_boot(attach_plan(root), root, facts())
    lacking = facts(listings={IMAGE: listing(drop="dm-cache")})
    with pytest.raises(ApplyError) as err:
        apply(plan, lvm, tmp_path, lambda e: None, read_state=lambda: state_with(lvm, lacking))  # type: ignore[arg-type]
    words = str(err.value)
    assert lvm.ran[-1][0] == "update-initramfs"
    assert "it ran but did not take effect: every installed kernel's initramfs carries" in words, words


def test_the_step_is_never_in_effect_beforehand_so_a_resumed_run_makes_the_image_again(tmp_path: Path) -> None:
    root = mounted(LAB, "dm-1", "/")
    lvm = FakeLvm()
    plan = with_boot(attach_plan(root), root, facts())
    apply(plan, lvm, tmp_path, lambda e: None, read_state=lambda: state_with(lvm, facts()))  # type: ignore[arg-type]
    state = state_with(lvm, facts(), plan)
    assert not in_effect(plan.steps[-1], state) and in_effect(plan.steps[-2], state)
    assert wholly_in_effect(plan, state), "a plan applied whole is let be: the image alone would be made again"
    before = len(lvm.ran)
    apply(plan, lvm, tmp_path, lambda e: None, read_state=lambda: state_with(lvm, facts()))  # type: ignore[arg-type]
    assert lvm.ran[before:] == [("update-initramfs", "-u", "-k", "all")]


# --- preflight's refusals: one sentence with the fix --------------------------------------------


@pytest.fixture
def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr("advisor.apply.preflight.Path.exists", lambda self: True)


def refusals(plan: Plan, read: BootFacts, inv: Inventory = LAB) -> list[str]:
    lvm = FakeLvm()
    state = dataclasses.replace(state_with(lvm, read), _inv=inv)
    return [p.sentence() for p in preflight(plan, lvm, state) if p.code == "boot"]  # type: ignore[arg-type]


def one_sentence(text: str) -> bool:
    return "\n" not in text and ". " not in text.replace("e.g. ", "") and not text.endswith(".")


def test_preflight_refuses_a_cache_lvm2_could_not_check_at_boot(as_root: None) -> None:
    assert refusals(attach_plan(), facts()) == []
    (missing,) = refusals(attach_plan(), facts(checkers=checkers("nowhere")))
    assert missing == (
        "lvm2 cannot check the metadata of /dev/labvg/data when it activates it at boot: "
        "global/cache_check_executable names /usr/local/sbin/cache_check, which is not installed; "
        'set cache_check_executable to "/usr/sbin/cache_check" in /etc/lvm/lvm.conf, and install '
        "thin-provisioning-tools"
    )
    (default,) = refusals(attach_plan(), facts(programs={}))
    assert default.endswith("install thin-provisioning-tools (apt-get install thin-provisioning-tools)")
    assert all(one_sentence(r) for r in (missing, default))
    assert refusals(attach_plan(), facts(checkers=checkers("disabled"))) == [], "lvm2 told to skip: a note"


def test_preflight_refuses_a_needed_device_whose_plan_does_not_make_the_initramfs(as_root: None) -> None:
    root = mounted(LAB, "dm-1", "/")
    (refused,) = refusals(attach_plan(root), facts(), root)
    assert refused == (
        "/dev/labvg/data is needed at boot (/ is mounted from /dev/labvg/data), and the plan does "
        "not make the initramfs again; make the plan again on this machine"
    )
    assert refusals(with_boot(attach_plan(root), root, facts()), facts(), root) == []


def test_preflight_refuses_a_writecache_initramfs_tools_would_leave_out(as_root: None) -> None:
    root = mounted(LAB, "dm-1", "/")
    plan = with_boot(
        writecache_attach(root, "labvg/data", "nvme0n1", WritecacheSpec(256 << 20, block_size=4096)), root, facts()
    )
    (refused,) = refusals(plan, facts(), root)
    assert refused.startswith(
        "the initramfs would not carry dm-writecache, which assembling /dev/labvg/data at boot "
        "needs (/ is mounted from /dev/labvg/data)"
    )
    assert refused.endswith("add the line dm-writecache to /etc/initramfs-tools/modules") and one_sentence(refused)
    told = facts(initramfs_adds=facts().initramfs_adds | {"dm_writecache"})
    assert refusals(plan, told, root) == []


def test_preflight_refuses_bcache_without_its_rule_and_a_kernel_without_the_module(as_root: None) -> None:
    plan = bcache_create(LAB, "sdf", "sdg")
    assert refusals(plan, facts()) == []
    (rule,) = refusals(plan, facts(udev={**facts().udev, "69-bcache.rules": None}))
    assert rule == (
        "bcache devices do not come back after a reboot: 69-bcache.rules of bcache-tools is not "
        "installed; install bcache-tools (apt-get install --reinstall bcache-tools)"
    )
    (module,) = refusals(plan, facts(kernels=(kernel(modules=kernel().modules - {"bcache"}),)))
    assert module.startswith(f"the kernel {VERSION} has no bcache module") and one_sentence(module)


def test_plan_notes_carry_the_warnings_and_preflight_lets_them_be(as_root: None) -> None:
    plan = with_boot(attach_plan(), LAB, facts(checkers=checkers("disabled")))
    assert any(n.startswith("Boot: lvm2 activates /dev/labvg/data without checking its metadata") for n in plan.notes)
    assert refusals(plan, facts(checkers=checkers("disabled"))) == []
    early = with_boot(attach_plan(), LAB, facts(programs={}))
    assert any(
        n.startswith("Boot (apply refuses the plan until this is fixed): lvm2 cannot check") for n in early.notes
    )
    ext4 = dataclasses.replace(dev(LAB, "bcache0"), fs_uuid="0b6a1e22-4c0e-4a43-9d3e-6f8f8bb7f8a1")
    inv = dataclasses.replace(LAB, devices=tuple(ext4 if d.name == "bcache0" else d for d in LAB.devices))
    detach = with_boot(bcache_detach(inv, "bcache0"), inv, with_table("/dev/bcache0 /srv ext4 defaults 0 2\n"))
    assert detach.steps[-1].argv[0] == "update-initramfs" and detach.steps[-1].post == ()
    assert any("UUID=0b6a1e22-4c0e-4a43-9d3e-6f8f8bb7f8a1 /srv ext4 defaults 0 2" in n for n in detach.notes)
    Plan.loads(detach.dumps())


def test_no_boot_fact_is_read_without_a_runner() -> None:
    state = LiveState(None, {}, {}, LAB)
    assert state.boot() == BootFacts() and state.initramfs_lacks("lvmcache") == []


def test_preflight_lets_a_removal_or_repair_run_when_lvm2_could_not_check_at_boot(as_root: None) -> None:
    """lvm2's metadata check matters to a cache being made; an uncache (or a mirror's repair,
    or a rescue) of a cache that exists must not wait for thin-provisioning-tools (review)."""
    from recipes.lvmcache import cache_repair, lvmcache_uncache

    plan = lvmcache_uncache(LAYERS, "labvg/data")
    assert refusals(plan, facts(checkers=checkers("nowhere")), LAYERS) == []
    mirror = build_inventory(RawSystem.load(FIXTURES / "lab-deadssd" / "f-pulled-raw.json"))
    new = next(d for d in mirror.devices if d.serial == "SSDF003")
    repair = cache_repair(mirror, "vgf/data", new.devnode)
    assert refusals(repair, facts(checkers=checkers("nowhere")), mirror) == [], "the mirror's repair must not wait"
    assert refusals(attach_plan(), facts(checkers=checkers("nowhere"))), "an attach is still refused"
