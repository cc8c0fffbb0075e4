"""`cachewise plan --format ansible`: the changes as argv (no shell), read-only checks as raw commands
that make a second run change nothing, and a size check that refuses changed devices. Applied for real in
the lab (tests/lab/test_apply_bcache_ansible_lab.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.disks.collect import RawSystem
from advisor.disks.discovery import build_inventory
from advisor.plan.model import Plan
from recipes.ansible import AnsibleError, render
from recipes.bcache import bcache_create
from recipes.lvmcache import CacheSpec, lvmcache_attach
from tests.conftest import FIXTURES

INV = build_inventory(RawSystem.load(FIXTURES / "lab-scan" / "raw-udev.json"))


class _Loader(yaml.SafeLoader):
    """Reads a playbook as Ansible does, taking !unsafe text as the text it holds."""


_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def load_book(text: str) -> object:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader with one more tag


def test_playbook_has_every_step_as_argv_guarded_by_its_checks() -> None:
    plan = lvmcache_attach(INV, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    book = load_book(render(plan))
    assert book[0]["become"] is True and book[0]["hosts"] == "all"
    tasks = book[0]["tasks"]
    commands = [t["ansible.builtin.command"]["argv"] for t in tasks
                if "ansible.builtin.command" in t and t["name"].startswith("step ")]
    assert commands == [list(s.argv) for s in plan.steps]
    assert not any("ansible.builtin.shell" in t for t in tasks)
    steps = [t for t in tasks if t["name"].startswith("step ") and "ansible.builtin.command" in t]
    assert all(t["when"].startswith("not (cw_done_") for t in steps), "a step in effect is not run again"
    sizes = [t for t in tasks if "ansible.builtin.assert" in t and "size it was planned with" in t["name"]]
    assert len(sizes) == 2 and "268435456" in sizes[0]["ansible.builtin.assert"]["that"][0]
    pre = [t for t in tasks if t["name"].startswith("before step 1")]
    assert pre, "the first step's preconditions (no signature, not mounted) are asserted"
    # Only the changes use the command module; read-only checks are raw commands that never
    # fail the play by themselves (their results go to asserts and the in-effect facts).
    assert sum("ansible.builtin.command" in t for t in tasks) == len(plan.steps)
    probes = [t for t in tasks if "ansible.builtin.raw" in t]
    assert len(probes) > 2 * len(plan.steps)
    assert all(t["failed_when"] is False and t["changed_when"] is False for t in probes)
    assert "lsblk -bdno SIZE /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_NVME0001 2>/dev/null" in [
        t["ansible.builtin.raw"] for t in probes]


def test_raw_checks_quote_their_arguments() -> None:
    from recipes.ansible import _probe
    task = _probe("x", ["lvs", "vg/it's"], "r")
    assert task["ansible.builtin.raw"] == "lvs 'vg/it'\"'\"'s' 2>/dev/null"


def test_sysfs_plans_are_not_offered_as_playbooks() -> None:
    plan = bcache_create(INV, "sda", "nvme0n1")
    with pytest.raises(AnsibleError, match="sysfs"):
        render(plan)


def test_ansible_accepts_the_playbook(tmp_path: Path) -> None:
    # ansible-core is in the lab extra, which the test command installs next to this Python.
    program = Path(sys.executable).parent / "ansible-playbook"
    assert program.exists(), "ansible-core is not installed: pip install -e '.[test,lab]'"
    book = tmp_path / "attach.yml"
    book.write_text(render(lvmcache_attach(INV, "labvg/data", "nvme0n1", CacheSpec(256 << 20))))
    out = subprocess.run([str(program), "--syntax-check", "-i", "localhost,", str(book)],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


STUB_TOOLS = ("lsblk", "blkid", "pvs", "lvs", "pvcreate", "vgextend", "lvcreate", "lvconvert")


def run_playbook(book: Path, tmp_path: Path, state: dict[str, object],
                 extra: tuple[str, ...] = ()) -> tuple[str, dict[str, object]]:
    """ansible-playbook against localhost with lvm's tools replaced by tests/unit/stubs/lvmstub.py."""
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        for tool in STUB_TOOLS:
            (bin_dir / tool).symlink_to(Path(__file__).parent / "stubs" / "lvmstub.py")
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CW_STUB_STATE": str(state_file),
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "atmp"), "ANSIBLE_REMOTE_TEMP": str(tmp_path / "atmp"),
           "ANSIBLE_NOCOLOR": "1"}
    program = Path(sys.executable).parent / "ansible-playbook"
    out = subprocess.run([str(program), "-i", "localhost,", "-c", "local", "-e",
                          f"ansible_python_interpreter={sys.executable}", *extra, str(book)],
                         capture_output=True, text=True, env=env, check=False, timeout=300)
    return out.stdout + out.stderr, json.loads(state_file.read_text())


def recap(text: str) -> dict[str, int]:
    line = next(line for line in text.splitlines() if line.startswith("localhost") and "ok=" in line)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


def test_playbook_resumes_a_half_done_attach_and_then_changes_nothing(tmp_path: Path) -> None:
    # The fresh attach, run twice, is shown on real lvm2 in the lab; here the host was left
    # after step 3 (PV in the VG, the cache data LV made): only steps 4 to 6 may run.
    plan = lvmcache_attach(INV, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    book = tmp_path / "attach.yml"
    book.write_text(render(plan))
    ssd = plan.devices[1].path
    state: dict[str, object] = {
        "sizes": {d.path: d.size_bytes for d in plan.devices},
        "pvs": {plan.devices[0].path: "labvg", ssd: "labvg"},
        "lvs": {"labvg/data": {"segtype": "linear", "cache_mode": ""},
                "labvg/data_cache": {"segtype": "linear", "cache_mode": ""}},
        "ran": []}
    text, after = run_playbook(book, tmp_path, state)
    assert recap(text)["failed"] == 0 and recap(text)["changed"] == 3, text[-3000:]
    assert [r[:2] for r in after["ran"]] == [["lvcreate", "--yes"], ["lvconvert", "--yes"], ["lvconvert", "--yes"]]  # type: ignore[index]
    assert after["lvs"]["labvg/data"] == {"segtype": "cache", "cache_mode": "writethrough"}  # type: ignore[index]
    text, again = run_playbook(book, tmp_path, {**after, "ran": []})
    assert recap(text)["changed"] == 0 and recap(text)["failed"] == 0 and again["ran"] == [], text[-3000:]


def test_playbook_stops_before_any_change_when_a_device_changed_size(tmp_path: Path) -> None:
    plan = lvmcache_attach(INV, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    book = tmp_path / "attach.yml"
    book.write_text(render(plan))
    state: dict[str, object] = {
        "sizes": {plan.devices[0].path: plan.devices[0].size_bytes, plan.devices[1].path: 512 << 20},
        "pvs": {plan.devices[0].path: "labvg"}, "lvs": {"labvg/data": {"segtype": "linear", "cache_mode": ""}},
        "ran": []}
    text, after = run_playbook(book, tmp_path, state)
    assert recap(text)["failed"] == 1 and after["ran"] == []
    assert f"{plan.devices[1].path} is missing or changed since planning; nothing was changed" in text


def _fresh_state(plan: Plan) -> dict[str, object]:
    return {"sizes": {d.path: d.size_bytes for d in plan.devices}, "pvs": {plan.devices[0].path: "labvg"},
            "lvs": {"labvg/data": {"segtype": "linear", "cache_mode": ""}}, "ran": []}


def test_check_mode_runs_the_read_only_checks_and_changes_nothing(tmp_path: Path) -> None:
    """`ansible-playbook --check` skips commands; the read-only checks run anyway (check_mode:
    false), so the preflight and the in-effect facts hold and the play ends without a failure."""
    plan = lvmcache_attach(INV, "labvg/data", "nvme0n1", CacheSpec(256 << 20))
    book = tmp_path / "attach.yml"
    book.write_text(render(plan))
    text, after = run_playbook(book, tmp_path, _fresh_state(plan), ("--check",))
    assert recap(text)["failed"] == 0, text[-3000:]
    assert [r[0] for r in after["ran"]] == [], "nothing changes under --check"  # type: ignore[union-attr]
    assert "preflight: " in text and "lsblk" not in [r[0] for r in after["ran"]]  # type: ignore[union-attr]


def test_device_data_is_never_templated_on_the_controller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan whose text holds a Jinja delimiter gets no playbook; and all text from the devices
    and the plan is written !unsafe anyway: with that refusal taken away, Jinja in it is shown,
    never run."""
    from recipes import ansible

    marker = tmp_path / "templated"
    jinja = "{{ lookup('pipe', 'touch " + str(marker) + "') }}"
    plan = dataclasses.replace(lvmcache_attach(INV, "labvg/data", "nvme0n1", CacheSpec(256 << 20)),
                               title=f"Attach {jinja}")
    with pytest.raises(AnsibleError, match="which Ansible would run as a template"):
        render(plan)
    monkeypatch.setattr(ansible, "_jinja_in", lambda plan: None)
    book = tmp_path / "attach.yml"
    book.write_text(render(plan))
    assert "!unsafe 'Attach {{ lookup" in book.read_text()
    text, _ = run_playbook(book, tmp_path, _fresh_state(plan), ("--check",))
    assert not marker.exists(), "the title was templated on the controller"
    assert "lookup('pipe'" in text and recap(text)["failed"] == 0, text[-3000:]


def test_only_the_checks_that_look_up_a_kernel_name_are_templated() -> None:
    """Whether a raw command is templated is the check kind's to say, never its text's: a device
    argument that spells the playbook's own variable is still written !unsafe."""
    from advisor.plan.checks import NotMounted, Sysfs
    from recipes.ansible import _asserted

    sly = NotMounted(device="/dev/x{{ lookup('pipe','id') }}{# {{ cw_kname_ #}")
    probe = _asserted(sly, "r", "true", ("a", "b"), "msg")[0]
    assert type(probe["ansible.builtin.raw"]).__name__ == "Unsafe"
    sysfs = _asserted(Sysfs(path="{backing}/bcache/state", value="clean"), "r", "true", ("a", "b"), "msg")[0]
    assert type(sysfs["ansible.builtin.raw"]) is str and "cw_kname_backing" in sysfs["ansible.builtin.raw"]
