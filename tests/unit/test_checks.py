"""The plan checks: one vocabulary, three renderings (the preview's sentence, the evaluation on the
live system, the playbook's command and condition) for every kind, and the plan-file form."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.plan.checks import Ansible, BcacheSuperblock, Check, CheckError, NoSignature, from_json
from advisor.plan.language import TUNABLES_FILE
from advisor.readers.lvm import Lv
from tests.conftest import FIXTURES

INV = build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))
SAMPLE_ARGS = {"device": "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001", "vg": "labvg", "lv": "labvg/data",
               "segtype": "cache", "mode": "writethrough", "path": "{backing}/bcache/state", "value": "clean|no cache",
               "file": TUNABLES_FILE}

SAMPLE_ARGS["needs"] = "lvmcache"  # InitramfsCarries
SAMPLE_ARGS["pool"] = "labvg/data_cache"  # CachePool


class View:
    """A SystemView over the lab inventory, an LVM model and a dictionary for sysfs."""

    def __init__(self) -> None:
        self.pvs = {"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001": "labvg"}
        self.lvs = {"labvg/data": Lv("labvg", "data", False, "cache", "writethrough", pool="data_cache_cpool")}
        self.files = {"{backing}/bcache/state": "clean"}

    def pv_vg(self, device: str) -> str | None:
        return self.pvs.get(device)

    def lv(self, name: str) -> Lv | None:
        return self.lvs.get(name)

    def device(self, path: str):  # type: ignore[no-untyped-def]
        from advisor.disks.discovery import find_device
        return find_device(INV, path)

    def partitions(self, dev):  # type: ignore[no-untyped-def]
        return [p for p in (INV.by_name(n) for n in dev.partitions) if p is not None]

    def read_sysfs(self, path: str) -> str | None:
        return self.files.get(path)

    def sysfs_exists(self, path: str) -> bool:
        return path in self.files

    def initramfs_lacks(self, needs: str) -> list[str]:
        return [] if needs == "lvmcache" else [f"an image lacks what {needs} needs"]

    def read_config(self, path: str) -> str | None:
        return self.files.get(path)


def every_kind() -> list[Check]:
    return [cls(**{f.name: SAMPLE_ARGS[f.name] for f in dataclasses.fields(cls)})
            for cls in Check.registry.values()]


def test_every_kind_has_all_three_renderings() -> None:
    kinds = every_kind()
    assert {c.kind for c in kinds} >= {"pv", "not_pv", "pv_in_vg", "not_pv_in_vg", "lv", "no_lv", "segtype",
                                       "not_segtype", "cache_mode", "no_signature", "not_mounted", "bcache_sb",
                                       "sysfs", "sysfs_exists", "no_sysfs"}
    for check in kinds:
        sentence = check.describe()
        assert sentence and "{" not in sentence.replace("{backing}", ""), check.kind
        assert isinstance(check.holds(View()), bool), check.kind
        form = check.ansible("cw_x")
        assert isinstance(form, Ansible) and form.argv and all(isinstance(a, str) for a in form.argv), check.kind
        assert "cw_x." in form.condition and "r." not in form.condition.replace("cw_x.", ""), check.kind


def test_a_kind_without_a_rendering_is_caught() -> None:
    @dataclasses.dataclass(frozen=True)
    class Half(Check):  # registers itself; removed again below
        kind = "half-for-test"
        device: str

        def describe(self) -> str:
            return "half"

    try:
        with pytest.raises(NotImplementedError):
            Half("x").holds(View())
        with pytest.raises(NotImplementedError):
            Half("x").ansible()
    finally:
        del Check.registry["half-for-test"]


def test_negated_kinds_are_the_opposite_on_the_same_system() -> None:
    view = View()
    by_kind = {c.kind: c for c in every_kind()}
    for kind, negated in (("pv", "not_pv"), ("pv_in_vg", "not_pv_in_vg"), ("lv", "no_lv"),
                          ("sysfs_exists", "no_sysfs"), ("segtype", "not_segtype")):
        assert by_kind[kind].holds(view) is True and by_kind[negated].holds(view) is False, kind
    assert by_kind["cache_mode"].holds(view) and by_kind["sysfs"].holds(view)
    # The lab's NVMe is blank; its bcache backing disk (serial BCB0001) holds a superblock.
    assert by_kind["no_signature"].holds(view) is True and by_kind["bcache_sb"].holds(view) is False
    backing = next(d for d in INV.devices if d.serial == "BCB0001").devnode
    assert BcacheSuperblock(backing).holds(view) is True and NoSignature(backing).holds(view) is False


def test_plan_file_form_round_trips_and_refuses_unknown_or_bad_checks() -> None:
    for check in every_kind():
        assert from_json(check.to_json()) == check
    with pytest.raises(CheckError, match="unknown check 'rm'"):
        from_json({"kind": "rm", "args": {"path": "/"}})
    with pytest.raises(CheckError, match="takes the text arguments device"):
        from_json({"kind": "pv", "args": {"device": "/dev/sda", "extra": "x"}})
    with pytest.raises(CheckError, match="only look at bcache's sysfs files"):
        from_json({"kind": "sysfs", "args": {"path": "/etc/shadow", "value": "x"}})
    with pytest.raises(CheckError, match="only look at bcache's sysfs files"):
        from_json({"kind": "sysfs_exists", "args": {"path": "/sys/fs/bcache/../../../etc"}})


def test_role_paths_read_the_kernel_name_the_playbook_looked_up() -> None:
    sysfs = next(c for c in every_kind() if c.kind == "sysfs")
    assert sysfs.role == "backing"
    form = sysfs.ansible("r1")
    assert form.argv == ("cat", "/sys/class/block/{{ cw_kname_backing.stdout | trim }}/bcache/state")
    assert form.condition == '(r1.rc == 0 and ("clean" in r1.stdout or "no cache" in r1.stdout))'


def test_every_condition_is_valid_jinja_for_ansible(tmp_path: Path) -> None:
    """ansible-playbook --syntax-check does not compile `when` expressions, so run them: a local
    play with each condition over made-up results, which Ansible must evaluate without error."""
    program = Path(sys.executable).parent / "ansible-playbook"
    assert program.exists(), "ansible-core is not installed: pip install -e '.[test,lab]'"
    tasks = [{"name": "results", "ansible.builtin.set_fact": {
        "cw_r": {"rc": 0, "stdout": "clean", "stdout_lines": ["disk ", "part"]},
        "cw_kname_backing": {"stdout": "sdb"}}}]
    for check in every_kind():
        tasks.append({"name": check.kind, "ansible.builtin.debug": {"msg": f"{{{{ {check.ansible('cw_r').condition} }}}}"}})
    book = tmp_path / "conditions.yml"
    book.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    out = subprocess.run([str(program), "-i", "localhost,", "-c", "local", "-e",
                          f"ansible_python_interpreter={sys.executable}", str(book)],
                         capture_output=True, text=True, check=False, timeout=300,
                         env={"ANSIBLE_LOCAL_TEMP": str(tmp_path / "a"), "ANSIBLE_REMOTE_TEMP": str(tmp_path / "a"),
                              "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert out.returncode == 0 and "failed=0" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]
