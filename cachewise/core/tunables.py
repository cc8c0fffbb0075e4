"""Tunables: bcache's settings the kernel forgets at every boot, set again from cachewise's files
under /etc/cachewise/bcache (advisor/tunables.py; the package's udev rule runs ``apply`` for
each bcache device that appears), shown beside their live values, and the ones that drifted
(advisor/health/tunables.py), which ``scan`` and ``status`` report."""

from __future__ import annotations

from dataclasses import dataclass

from advisor import tunables
from advisor.errors import codes, next_step
from advisor.health import tunables as health
from advisor.health.findings import Finding
from advisor.tunables import Applied, Backing, Configured, TunablesError
from cachewise.core.context import Core, Refused, is_root

codes(
    {
        "tunables-need-root": "setting bcache's tunables writes to its sysfs files, which only root may do",
        "tunables-snapshot": "a saved snapshot has no bcache devices whose tunables could be set",
    }
)


def _live(core: Core) -> None:
    if core.replay:
        raise Refused("tunables-snapshot", next=[next_step("run-on-machine")])


def drift(core: Core) -> list[Finding]:
    """The tunables of this machine's bcache devices that are not what their files say, and the
    files that are not used (none for a saved snapshot: its files are not on this machine)."""
    return [] if core.replay else health.drift()


@dataclass(frozen=True)
class Outcome:
    """What ``apply`` did: each device set from its file (or found without one), and the files
    refused. ``nothing``: no file exists at all, so no device was looked for."""

    applied: tuple[Applied, ...] = ()
    refused: tuple[TunablesError, ...] = ()
    nothing: bool = False


def apply(core: Core, device: str | None = None, wait: float = 0.0) -> Outcome:
    """Set the tunables of ``device`` (bcacheN or its backing device, waiting up to ``wait``
    seconds for the kernel to show it) from its file, or of every bcache device that has one.
    A device's refused file, or a device that is not bcache's, is a TunablesError."""
    _live(core)
    if not is_root():
        raise Refused("tunables-need-root", next=[next_step("become-root")])
    found, refused = tunables.configured()
    if device is not None:
        if wait and not found and not refused:
            return Outcome(nothing=True)  # udev's case: most bcache devices have no file
        return Outcome((tunables.apply(tunables.find(device, wait=wait)),))
    uuids = {c.uuid for c in found}
    return Outcome(tuple(tunables.apply(b) for b in tunables.backings() if b.uuid in uuids), tuple(refused))


@dataclass(frozen=True)
class Shown:
    """Every file with the device it configures (None: not on this machine), the files refused,
    and the findings of them all."""

    files: tuple[tuple[Configured, Backing | None], ...]
    refused: tuple[TunablesError, ...]
    findings: tuple[Finding, ...]


def show(core: Core) -> Shown:
    _live(core)
    try:
        found, refused = tunables.configured()
    except TunablesError as exc:
        found, refused = [], [exc]
    live = tunables.backings()
    by_uuid = {b.uuid: b for b in live}
    return Shown(
        tuple((c, by_uuid.get(c.uuid)) for c in found),
        tuple(refused),
        tuple(health.compare(found, live, refused, root=is_root())),
    )
