"""Shell completion of cache names (issue 30): `watch`, `tui --watch` and the plans that change or
remove a cache complete the caches (VG/LV of a cached LV, bcacheN), not every disk; the completer
runs in bash and zsh with a dmsetup of our own first on PATH."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cachewise.cli import build_parser
from cachewise.cli.completion import CACHES, DEVICES, PREAMBLE, actions, bash, value_kind, zsh

# What `dmsetup ls --target cache` / `--target writecache` print: the dm name, a tab, (major:minor).
DMSETUP = """#!/bin/sh
case "$*" in
  "ls --target cache") printf 'labvg-data\\t(253:0)\\nmy--vg-lv--a\\t(253:5)\\n' ;;
  "ls --target writecache") printf 'vg0-fast\\t(253:9)\\n' ;;
  *) echo "No devices found" ;;
esac
"""
EXPECTED = {"labvg/data", "my-vg/lv-a", "vg0/fast"}


@pytest.fixture
def fake_path(tmp_path: Path) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "dmsetup").write_text(DMSETUP)
    (bin_dir / "dmsetup").chmod(0o755)
    (bin_dir / "lsblk").write_text("#!/bin/sh\nprintf '/dev/sda\\n/dev/sdb\\n'\n")
    (bin_dir / "lsblk").chmod(0o755)
    return f"{bin_dir}:/usr/bin:/bin"


def test_the_parser_marks_the_arguments_that_name_a_cache() -> None:
    marked = [(a.dest, a.option_strings) for a in actions(build_parser()) if value_kind(a) == "cache"]
    assert ("target", []) in marked  # watch TARGET
    assert ("watch", ["--watch"]) in marked  # tui --watch
    assert ("device", ["--device"]) in marked and ("lv", ["--lv"]) in marked
    # Plans that make a cache take devices and the LV to cache: never a cache.
    makes = build_parser()._subparsers._group_actions[0].choices["plan"]  # type: ignore[union-attr]
    attach = makes._subparsers._group_actions[0].choices["lvmcache-attach"]  # type: ignore[union-attr]
    assert all(value_kind(a) != "cache" for a in attach._actions)


def test_the_scripts_use_the_cache_completer_for_those_arguments() -> None:
    script = bash(build_parser())
    for name in ("watch_pos_0", "tui___watch", "plan_remove___device", "plan_lvmcache_uncache___lv",
                 "plan_writecache_detach___lv", "plan_bcache_detach___device", "plan_lvmcache_mode___lv"):
        assert f"_shtab_cachewise_{name}_COMPGEN={CACHES['bash']}" in script, name
    assert f"_shtab_cachewise_plan_lvmcache_attach___lv_COMPGEN={CACHES['bash']}" not in script
    assert f"_shtab_cachewise_plan_lvmcache_attach___ssd_COMPGEN={DEVICES['bash']}" in script
    z = zsh(build_parser())
    assert ":TARGET:_cachewise_caches" in z and "or bcacheN or its backing device:_cachewise_caches" in z
    assert "_cachewise_caches() {" in z


def _bash_complete(script: Path, words: list[str], path: str) -> list[str]:
    quoted = " ".join("'" + w + "'" for w in words)
    program = (f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _cachewise; "
               'printf "%s\\n" "${COMPREPLY[@]}"')
    proc = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True, check=True,
                          env={"PATH": path, "HOME": "/nonexistent"})
    return [line for line in proc.stdout.splitlines() if line]


def test_bash_completes_caches_with_a_fake_dmsetup(tmp_path: Path, fake_path: str) -> None:
    script = tmp_path / "cachewise.bash"
    script.write_text(bash(build_parser()))
    offered = set(_bash_complete(script, ["cachewise", "watch", ""], fake_path))
    assert offered >= EXPECTED and not {"/dev/sda", "/dev/sdb"} & offered
    assert set(_bash_complete(script, ["cachewise", "watch", "my"], fake_path)) == {"my-vg/lv-a"}
    assert set(_bash_complete(script, ["cachewise", "tui", "--watch", ""], fake_path)) >= EXPECTED
    assert set(_bash_complete(script, ["cachewise", "plan", "remove", "--device", "vg0"], fake_path)) == {"vg0/fast"}
    # A device argument still offers the disks.
    assert set(_bash_complete(script, ["cachewise", "plan", "lvmcache-attach", "--ssd", ""], fake_path)) == {
        "/dev/sda", "/dev/sdb"}


def test_zsh_lists_the_same_cache_names(fake_path: str) -> None:
    if shutil.which("zsh") is None:
        pytest.fail("zsh is needed: packaging/test.sh installs it (packaging/deb-packages.txt)")
    proc = subprocess.run(["zsh", "-f", "-c", PREAMBLE["zsh"] + "\n_cachewise_cache_names"], capture_output=True,
                          text=True, check=True, env={"PATH": fake_path, "HOME": "/nonexistent"})
    assert proc.stderr == ""
    assert set(proc.stdout.splitlines()) >= EXPECTED
