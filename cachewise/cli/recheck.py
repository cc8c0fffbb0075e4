"""`cachewise recheck TARGET`: does the cache still fit its workload? Keep, grow, shrink, change
mode, remove, or can't judge yet; with the plan that carries it out, saved with ``-o``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from advisor.errors import CachewiseError
from advisor.health.recheck import Verdict, cited
from advisor.units import human_size
from cachewise.cli import common
from cachewise.cli.output import error, print_json, show, warn
from cachewise.cli.phrases import word
from cachewise.core import plans
from cachewise.core.files import check_output
from cachewise.core.recheck import Rechecked, RecheckRequest, recheck
from cachewise.render import plan_preview

# Exit status, for scripts: keep; a change advised; could not look; can't judge yet (2 is
# argparse's usage error, so can't judge is 4).
KEEP, CHANGE, CANNOT_LOOK, CANT_JUDGE = 0, 1, 3, 4


def verdict_json(r: Rechecked, saved: Path | None = None) -> dict[str, Any]:
    """recheck --json (schema cachewise.recheck/1)."""
    return {
        "schema": "cachewise.recheck/1",
        **r.verdict.to_json(),
        "plan_json": r.plan.to_json() if r.plan is not None else None,
        "plan_refused": word(r.refused) if r.refused is not None else None,
        "plan_saved": str(saved) if saved is not None else None,
        "warnings": [word(w) for w in r.warnings],
    }


def _text(v: Verdict) -> str:
    lines = [f"{v.target} ({v.backend}, {human_size(v.capacity_bytes)}, {v.mode or 'mode unknown'}): {v.summary}"]
    lines += [f"  - {cited(reason)}" for reason in v.reasons]
    if v.how:
        lines.append(f"  What to do: {v.how}")
    return "\n".join(lines)


def cmd_recheck(args: argparse.Namespace) -> int:
    try:
        if args.output is not None:
            check_output(args.output, "no plan was made")
        request = RecheckRequest(args.target, args.trace, record=not args.no_record)
        result = recheck(common.core_for(args), request)
    except CachewiseError as exc:
        error(word(exc))
        return CANNOT_LOOK
    for warning in result.warnings:
        warn(warning)
    saved: Path | None = None
    failed: CachewiseError | None = None
    if args.output is not None:
        if result.plan is None:
            print(
                f"cachewise: the re-check names no plan cachewise makes, so nothing was saved to {args.output}.",
                file=sys.stderr,
            )
        else:
            try:
                plans.save(result.plan, args.output)
                saved = args.output
            except CachewiseError as exc:
                failed = exc
    v = result.verdict
    if args.json:
        print_json(verdict_json(result, saved))
    else:
        print(_text(v))
        if result.refused is not None:
            print(f"  No plan: {word(result.refused)}")
        elif result.plan is not None:
            print()
            show(plan_preview(result.plan))
            if saved is not None:
                print(f"\nSaved to {saved}. Run it with: sudo cachewise apply {saved}")
            elif failed is None:
                print("\nSave it with -o FILE, then run it with: sudo cachewise apply FILE")
    if failed is not None:
        error(word(failed))
        return CANNOT_LOOK
    if v.action == "keep":
        return KEEP
    return CANT_JUDGE if v.action == "cant-judge" else CHANGE
