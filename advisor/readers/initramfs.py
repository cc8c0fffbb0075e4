"""What an initramfs image holds, as ``lsinitramfs`` (initramfs-tools) or ``lsinitrd`` (dracut)
lists it.

``lsinitramfs IMAGE`` prints one path a line, relative to the image's root (``usr/sbin/lvm``),
the early microcode archive's paths first. ``lsinitrd IMAGE`` prints a header (``Image:``,
``dracut modules:``, rules of ``=``) and then ``ls -l`` lines, a link's target after ``->``.
Either way the result is the set of paths in the image. Fixtures:
tests/fixtures/host-boot/lsinitramfs-*.txt (initramfs-tools 0.142, Debian 12) and
lsinitrd-dracut059-on-debian12.txt (dracut 059's lsinitrd on the same image).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from advisor.errors import Described, codes
from advisor.runner import CommandRunner

LISTERS = ("lsinitramfs", "lsinitrd")
# An ls -l line: mode, links, owner, group, size (or major, minor), month, day, time or year, name.
_LS = re.compile(
    r"[-dlcbps][-rwxsStT]{9}[.+]?\s+\d+\s+\S+\s+\S+\s+(?:\d+,\s*\d+|\d+)\s+\S+\s+\d+\s+[\d:]+\s(?P<name>.+)"
)
MAX_ENTRIES = 1_000_000  # far more than any image holds; the rest is not read

codes({"initramfs-unreadable": "{why}"})


class ListingError(Described, ValueError):
    """An image could not be listed; the message names the image and says why."""

    CODE = "initramfs-unreadable"


@dataclass(frozen=True)
class Listing:
    image: str
    paths: frozenset[str]  # relative to the image's root, without ./ or a leading /


def _clean(path: str) -> str:
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def parse_lsinitramfs(text: str) -> frozenset[str]:
    return frozenset(p for p in (_clean(line) for line in text.splitlines()[:MAX_ENTRIES]) if p and p != ".")


def parse_lsinitrd(text: str) -> frozenset[str]:
    out: set[str] = set()
    for line in text.splitlines()[:MAX_ENTRIES]:
        m = _LS.fullmatch(line.rstrip("\n"))
        if m is None:
            continue  # the header, the module list, the rules
        name = m["name"]
        if line.startswith("l") and " -> " in name:
            name = name.split(" -> ", 1)[0]
        name = _clean(name)
        if name and name != ".":
            out.add(name)
    return frozenset(out)


def list_image(runner: CommandRunner, lister: str, image: str) -> Listing:
    """The paths in ``image``, listed by ``lister`` (one of LISTERS); ListingError when it
    cannot be listed (the runner's CommandError when the lister cannot run)."""
    if lister not in LISTERS:
        raise ValueError(f"{lister} lists no initramfs")
    result = runner.run([lister, image], timeout=300, check=False)
    if result.returncode != 0:
        words = " ".join(result.stderr.split())[:300] or f"exit code {result.returncode}"
        raise ListingError(f"{lister} could not list {image}: {words}")
    paths = parse_lsinitramfs(result.stdout) if lister == "lsinitramfs" else parse_lsinitrd(result.stdout)
    if not paths:
        raise ListingError(f"{lister} listed nothing in {image}")
    return Listing(image, paths)
