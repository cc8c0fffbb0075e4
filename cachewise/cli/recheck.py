"""`cachewise recheck TARGET`: does the cache still fit its workload? Keep, grow, shrink, change
mode, remove, or can't judge yet; with the plan that carries it out, saved with ``-o``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from advisor.errors import CachewiseError
from advisor.health.recheck import Verdict
from advisor.units import human_size
from cachewise.cli import common
from cachewise.cli.output import error, print_json, show
from cachewise.cli.phrases import word
from cachewise.core import plans
from cachewise.core.files import check_output
from cachewise.core.recheck import Rechecked, RecheckRequest, recheck
from cachewise.render import plan_preview

# Exit status, for scripts: keep; a change advised; can't judge yet; could not look.
KEEP, CHANGE, CANT_JUDGE, CANNOT_LOOK = 0, 1, 2, 3


def verdict_json(r: Rechecked) -> dict[str, Any]:
    """recheck --json (schema cachewise.recheck/1)."""
    return {
        "schema": "cachewise.recheck/1",
        **r.verdict.to_json(),
        "plan_json": r.plan.to_json() if r.plan is not None else None,
        "plan_refused": word(r.refused) if r.refused is not None else None,
    }


def _text(v: Verdict) -> str:
    lines = [f"{v.target} ({v.backend}, {human_size(v.capacity_bytes)}, {v.mode or 'mode unknown'}): {v.summary}"]
    for reason in v.reasons:
        cites = f" [{', '.join(reason.findings)}]" if reason.findings else ""
        lines.append(f"  - {reason.text}{cites}")
    if v.how:
        lines.append(f"  What to do: {v.how}")
    return "\n".join(lines)


def cmd_recheck(args: argparse.Namespace) -> int:
    try:
        if args.output is not None:
            check_output(args.output, "no plan was made")
        request = RecheckRequest(args.target, args.trace, record=not args.no_record)
        result = recheck(common.core_for(args), request)
        if result.plan is not None and args.output is not None:
            plans.save(result.plan, args.output)
    except CachewiseError as exc:
        error(word(exc))
        return CANNOT_LOOK
    v = result.verdict
    if args.json:
        print_json(verdict_json(result))
    else:
        print(_text(v))
        if result.refused is not None:
            print(f"  No plan: {word(result.refused)}")
        elif result.plan is not None:
            print()
            show(plan_preview(result.plan))
            if args.output is not None:
                print(f"\nSaved to {args.output}. Run it with: sudo cachewise apply {args.output}")
            else:
                print("\nSave it with -o FILE, then run it with: sudo cachewise apply FILE", file=sys.stdout)
    if v.action == "keep":
        return KEEP
    return CANT_JUDGE if v.action == "cant-judge" else CHANGE
