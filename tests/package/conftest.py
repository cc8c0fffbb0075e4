"""The package tier: build the .deb and try it in a clean Debian chroot (needs root)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/package/" in str(item.fspath):
            item.add_marker(pytest.mark.package)


@pytest.fixture(scope="session")
def deb() -> Path:
    """dist/cachewise_VERSION_amd64.deb, built by the packaging script users run."""
    missing = [t for t in ("dpkg-buildpackage", "dh", "lintian", "debootstrap") if shutil.which(t) is None]
    if os.geteuid() != 0 or missing:
        if "1" in (os.environ.get("CACHEWISE_SKIP_PACKAGE"), os.environ.get("CACHEWISE_SKIP_LAB")):
            pytest.skip("CACHEWISE_SKIP_PACKAGE=1 or CACHEWISE_SKIP_LAB=1: the package tier is skipped")
        pytest.fail(f"the package tier needs root and {', '.join(missing) or 'nothing else'}: "
                    "run `bash packaging/test.sh` as root, which installs packaging/deb-packages.txt "
                    "(CACHEWISE_SKIP_PACKAGE=1 skips the tier)")
    proc = subprocess.run(["bash", "packaging/build-deb.sh"], cwd=REPO, check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return REPO / proc.stdout.strip().splitlines()[-1]
