"""The .deb as an admin meets it: lintian-clean, installed with apt in a clean Debian 12 chroot,
working there (version, a real scan, its man page, completion, a user without root), and gone
without a trace after a purge."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.package.chroot import apt_get, files, fresh_chroot, in_chroot
from tests.package.conftest import REPO

# What dpkg and apt keep about any package, and caches that are rebuilt from what is installed.
BOOKKEEPING = ("/var/lib/dpkg", "/var/log", "/var/cache/apt", "/var/lib/apt", "/var/cache/debconf",
               "/var/cache/man", "/tmp", "/root/.cache")
# Where a file would take part in the boot: the initramfs, module and LVM configuration, udev, unit
# generators.
BOOT_TIME = ("/etc/initramfs-tools", "/usr/share/initramfs-tools", "/usr/lib/dracut", "/etc/dracut.conf.d",
             "/etc/modprobe.d", "/lib/modprobe.d", "/etc/modules-load.d", "/usr/lib/modules-load.d", "/etc/lvm",
             "/lib/udev", "/usr/lib/udev", "/etc/udev", "/lib/systemd/system-generators",
             "/usr/lib/systemd/system-generators", "/etc/crypttab", "/etc/fstab")


def test_lintian_finds_no_errors(deb: Path) -> None:
    proc = subprocess.run(["lintian", "--fail-on", "error", "--no-tag-display-limit", str(deb)],
                          check=False, capture_output=True, text=True)
    errors = [line for line in proc.stdout.splitlines() if line.startswith("E:")]
    assert proc.returncode == 0 and not errors, proc.stdout + proc.stderr


def test_installs_works_and_purges_clean_in_a_fresh_chroot(deb: Path, tmp_path: Path) -> None:
    with fresh_chroot(tmp_path) as root:
        (root / "tmp" / deb.name).write_bytes(deb.read_bytes())
        depends = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True,
                                 check=True).stdout.strip()
        # The dependencies first, so the comparison below sees cachewise's own files only.
        apt_get(root, "satisfy", "--no-install-recommends", depends)
        before = files(root, BOOKKEEPING)

        apt_get(root, "install", "--no-install-recommends", f"/tmp/{deb.name}")
        version = in_chroot(root, "cachewise", "--version").stdout
        assert version.startswith("cachewise "), version
        scan = json.loads(in_chroot(root, "cachewise", "scan", "--json").stdout)
        assert scan["schema"] == "cachewise.scan/1"
        assert any(d["kind"] == "disk" for d in scan["devices"]), scan  # this machine's own disks
        page = in_chroot(root, "man", "-w", "cachewise").stdout.strip()
        assert page == "/usr/share/man/man8/cachewise.8.gz"
        rendered = in_chroot(root, "man", "-P", "cat", "cachewise").stdout
        assert "lvmcache-attach" in rendered and "--until-clean" in rendered
        assert (root / "usr/share/bash-completion/completions/cachewise").is_file()
        assert (root / "usr/share/zsh/vendor-completions/_cachewise").is_file()
        # Nothing at boot needs cachewise but the rule that sets bcache's tunables again
        # (docs/boot.md): no initramfs hook, no module or LVM configuration, no unit enabled.
        listed = in_chroot(root, "dpkg", "-L", "cachewise").stdout.split("\n")
        at_boot = {p for p in listed if p.startswith(BOOT_TIME) and (root / p.lstrip("/")).is_file()}
        assert at_boot <= {"/lib/udev/rules.d/70-cachewise-bcache-tunables.rules"}, at_boot
        assert not list((root / "etc/systemd/system").rglob("cachewise*")), "a unit of cachewise's is enabled"
        recommends = subprocess.run(["dpkg-deb", "-f", str(deb), "Recommends"], capture_output=True, text=True,
                                    check=True).stdout
        assert "thin-provisioning-tools" in recommends and "lvm2" in recommends  # lvm2's cache_check
        assert (root / "lib/systemd/system/cachewise-exporter.timer").is_file()
        assert (root / "lib/systemd/system/cachewise-doctor.timer").is_file()
        for unit in ("cachewise-capture@.service", "cachewise-capture@.timer"):  # templates, enabled per device
            assert "ExecStart" in (root / "lib/systemd/system" / unit).read_text() or unit.endswith(".timer"), unit
        for name in ("cachewise-alerts.yml", "cachewise-alerts.test.yml", "cachewise-dashboard.json"):
            assert (root / "usr/share/cachewise" / name).is_file(), name
        # doctor with Debian's python3-prometheus-client: its JSON, its exit code, the textfile
        doctor = in_chroot(root, "cachewise", "doctor", "--json", "--no-record", "--prometheus", "/tmp/c.prom",
                           check=False)
        assert doctor.returncode in (0, 1, 2), doctor.stdout + doctor.stderr
        assert json.loads(doctor.stdout)["schema"] == "cachewise.doctor/1"
        assert "cachewise_doctor_worst" in (root / "tmp/c.prom").read_text()
        assert (root / "lib/udev/rules.d/70-cachewise-bcache-tunables.rules").is_file()  # docs/tunables.md
        # The bundled (and stripped) NumPy and Numba at work: a trace's miss-ratio curve, and
        # the stack-distance loop compiled by Numba (short traces run it interpreted).
        trace = REPO / "tests/fixtures/traces/fio-v3.iolog"
        (root / "tmp/fio-v3.iolog").write_bytes(trace.read_bytes())
        analysis = json.loads(in_chroot(root, "cachewise", "analyze", "/tmp/fio-v3.iolog", "--json",
                                        "--no-record").stdout)
        assert analysis["schema"] == "cachewise.analysis/1" and analysis["curve_hit_ratio"], analysis.keys()
        compiled = in_chroot(root, "python3", "-I", "-c", "import sys; sys.path.insert(0, '/usr/lib/cachewise'); "
                             "import numpy as np; from advisor.workload.mrc import _compiled; "
                             "print(_compiled()(np.array([0, 1, 0, 2, 1, 0], dtype=np.int64), 3).tolist())")
        assert compiled.stdout.strip() == "[-1, -1, 1, -1, 2, 2]", compiled
        # The bundled Textual: the TUI starts on a terminal (script gives it one) on the start
        # screen, Esc shows the Disks screen, and q quits.
        tui = in_chroot(root, "sh", "-c", "(sleep 12; printf '\\033'; sleep 4; printf q) | TERM=xterm-256color "
                        "COLUMNS=100 LINES=30 timeout 60 script -qec cachewise /dev/null")
        drawn = re.sub(r"\x1b\[[0-9;?<>=$]*[A-Za-z]", "", tui.stdout)
        assert "What would you like to do?" in drawn, drawn[-2000:]
        assert "scanned in" in drawn and "hidden" in drawn and tui.returncode == 0, drawn[-2000:]
        # A user without root: the byte-compiled private libraries load read-only.
        user = in_chroot(root, "cachewise", "scan", "--json", "--no-record", user="nobody:nogroup")
        assert json.loads(user.stdout)["schema"] == "cachewise.scan/1"

        in_chroot(root, "dpkg", "--purge", "cachewise")
        after = files(root, BOOKKEEPING)
        assert after - before == set(), f"left behind after purge: {sorted(after - before)[:20]}"
        assert before - after == set(), f"removed what was not cachewise's: {sorted(before - after)[:20]}"
