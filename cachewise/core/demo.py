"""Demo: caches recorded in the lab, played back on the Warm-up screen, for people deciding
whether to try cachewise (and for the README's screenshots); and a user's own recording
(`cachewise watch --json-lines`) played back the same way.

Each scene (cachewise/core/data/demo-*.json, made by `python -m tests.vm.make_demo` from a lab
run; see cachewise/core/data/README.md) holds the disks as `scan --save-raw` saw them and the
samples `cachewise` recorded of one cache, with the prediction it was made from. Nothing here
reads, probes, records or changes this machine's disks.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from advisor.disks.collect import RawSystem
from advisor.errors import codes, next_step
from advisor.inputs import parse_json
from advisor.watch.recorded import RecordedSampler, Recording, load_json_lines, parse_demo
from advisor.watch.sampler import CacheRef
from cachewise.core.context import Core, Refused

codes({"demo-damaged": "the demo scene {scene} that came with cachewise cannot be read ({why})"})

# name: file, in the order `cachewise demo --scene` offers them
SCENES = {"warmup": "demo-warmup.json", "flush": "demo-flush.json"}


@dataclass(frozen=True)
class Scene:
    name: str
    title: str
    about: str
    core: Core
    watch: CacheRef  # the cache the scene opens on
    interval: float  # seconds between samples, as recorded
    until_clean: bool = False  # the scene is a flush: it ends when the cache is clean


def _core(
    raw: RawSystem, recordings: list[Recording], stall_seconds: float | None = None
) -> tuple[Core, RecordedSampler]:
    sampler = RecordedSampler(recordings, stall_seconds=stall_seconds)
    return Core.for_recording(raw, sampler), sampler


def scene(name: str) -> Scene:
    """A scene recorded in the lab, ready to play (its clock starts now)."""
    try:
        text = resources.files("cachewise.core").joinpath("data", SCENES[name]).read_text("utf-8")
        data, recordings = parse_demo(parse_json(text))
        raw = RawSystem.from_json(data["raw"])
        title, about, watch = data.get("title"), data.get("about"), data.get("watch")
        if not (isinstance(title, str) and isinstance(about, str) and isinstance(watch, str)):
            raise ValueError("it has no title, description or cache to watch")
        stall = data.get("stall_after")
        if stall is not None and not (isinstance(stall, int | float) and 0 < stall < 3600):
            raise ValueError(f"its stall_after is not a time ({stall!r})")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Refused("demo-damaged", scene=name, why=exc, next=[next_step("reinstall")]) from None
    core, sampler = _core(raw, recordings, stall)
    return Scene(name, title, about, core, sampler.find(watch), sampler.interval, data.get("until_clean") is True)


def replay_samples(path: Path, raw: RawSystem | None) -> Scene:
    """A user's own recording (`cachewise watch --json-lines > FILE`), over the disks of a saved
    snapshot when one is given (else none), opening on its first cache."""
    recordings = load_json_lines(path)
    empty = RawSystem(taken_at="", hostname="a recording", root=False, udev="none", blocks=[])
    core, sampler = _core(raw or empty, recordings)
    first = sampler.caches()[0]
    title = f"{path.name}: {', '.join(ref.name for ref in sampler.caches())}"
    return Scene("samples", title, f"samples recorded by `cachewise watch` in {path}", core, first, sampler.interval)


def ended(core: Core, ref: CacheRef) -> bool:
    """The recording of this cache has been played to its end (never, for a live cache)."""
    return core.recording is not None and core.recording.ended(ref)


def length(core: Core, ref: CacheRef) -> int:
    """How many samples the recording of this cache holds (0 for a live cache)."""
    if core.recording is None:
        return 0
    return sum(len(r.samples) for r in core.recording.recordings if r.ref.name == ref.name)
