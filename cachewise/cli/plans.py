"""`cachewise plan RECIPE` and `cachewise apply`: a recipe's plan, previewed, saved, and run.

A recipe's options come from its options dataclass (recipes/registry.py): the parser made a flag
of each field, and :func:`recipe_options` reads them back into the dataclass, sizes parsed.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from advisor.advice.config import RECORD_LONGER, CacheConfig
from advisor.apply.journal import Journal
from advisor.apply.run import ApplyError, Event
from advisor.backends import BCACHE
from advisor.errors import NOTHING, codes, next_step
from advisor.inputs import BadJson, MiB, Unreadable, load_json
from advisor.plan.model import Plan
from advisor.prediction import Prediction
from advisor.strict import StrictError, load
from cachewise.cli import common
from cachewise.cli.common import size
from cachewise.cli.output import error, print_json, show
from cachewise.cli.parser import flag
from cachewise.cli.phrases import word
from cachewise.core import Core, Refused, apply, discover, is_root, plans
from cachewise.core.files import check_output
from cachewise.render import event_line, plan_preview
from recipes.ansible import render
from recipes.common import check_backend
from recipes.registry import Recipe, options_of
from recipes.registry import recipe as registered

codes(
    {
        "recommendation-unreadable": "cannot read the recommendation {path}: {why}",
        "confirm-without-terminal": "applying changes disks; pass --yes to confirm without a terminal",
    },
    front_end=True,
)


def recipe_options(recipe: Recipe[Any], args: argparse.Namespace) -> Any:
    """The recipe's options dataclass from the `plan RECIPE` flags (a flag not given keeps the
    field's default)."""
    given: dict[str, Any] = {}
    for f, opt in options_of(recipe.options):
        value = getattr(args, f.name, None)
        if value is None:
            continue
        if opt.kind == "size":
            given[f.name] = size(value, flag(f.name), opt.minimum, opt.maximum)
        else:
            given[f.name] = tuple(value) if opt.repeat else value
    return recipe.options(**given)


RECOMMENDATION_LIMIT = 16 * MiB  # `recommend --json` writes a few hundred KiB at most


def recommended(path: Path) -> CacheConfig | None:
    """The cache a `recommend --json` output recommends (None: it recommends no cache)."""
    try:
        whole = load_json(path, RECOMMENDATION_LIMIT)
        data = whole["config"]
    except (Unreadable, BadJson) as exc:
        raise Refused("recommendation-unreadable", path=path, why=exc.why) from None
    except (KeyError, TypeError):
        raise Refused("recommendation-unreadable", path=path, why="it has no config") from None
    if data is None and whole.get("verdict") == "cant-judge":  # what to record is said here, never read from the file
        raise Refused("cant-judge-yet", record=RECORD_LONGER, next=[next_step("record-trace")])
    if data is None:
        return None
    if isinstance(data, dict):  # a hand-written or trimmed file may lack what only the report uses
        data = {"effective_bytes": 0, "fast_space_bytes": 0, **data}
    try:
        return load(CacheConfig, data, "its config")
    except StrictError as exc:
        raise Refused("recommendation-unreadable", path=path, why=exc.what) from None


def cmd_plan(args: argparse.Namespace) -> int:
    if args.json and args.format == "ansible":
        return error(f"--json and --format ansible ask for two different outputs; choose one. {NOTHING}")
    if args.output is not None:
        check_output(args.output, "no plan was made")
    core = common.core_for(args)
    recipe = plans.recipe_of(args.recipe)
    options = recipe_options(recipe, args)
    given = getattr(args, "recommendation", None) is not None
    config = recommended(args.recommendation) if given else None
    if given and recipe.adopt is not None:
        if config is None:  # it recommends no cache: refused as a recommendation of another kind is
            assert recipe.backend is not None
            check_backend(None, recipe.backend)
        else:
            options = recipe.adopt(options, config)
    plan = plans.make(core, discover.scan(core), args.recipe, options)
    if config is not None:
        plan = replace(plan, prediction=Prediction.from_config(asdict(config)))
    if args.format == "ansible":
        if args.output is not None:
            plans.save(plan, args.output, "ansible")
            print(
                f"Playbook written to {args.output}. Run it with: ansible-playbook -i HOSTS {args.output}",
                file=sys.stderr,
            )
            return 0
        sys.stdout.write(render(plan))
        return 0
    if args.output is not None:
        plans.save(plan, args.output)
    if args.json or args.format == "json":
        sys.stdout.write(plan.dumps())
        return 0
    # Into a file or a pipe, each command on one line (a terminal gets its width, paths whole).
    show(plan_preview(plan))  # wide into a file or a pipe (output.console)
    if args.output is not None:
        print(f"\nSaved to {args.output}. Run it with: sudo cachewise apply {args.output}")
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    if not is_root():
        return error(f"applying a plan changes disks and needs root; run it with sudo. {NOTHING}")
    core = common.core_for(args)
    if args.abandon is not None:
        return _abandon(core, args.abandon)
    plan, journal = apply.choose(
        core,
        args.plan,
        args.resume,
        args.rollback,
        owners=plans.apply_owners(),
        accept_elsewhere=args.plan_from_elsewhere,
    )

    def report(e: Event) -> None:
        if not args.json:
            print(event_line(e), file=sys.stderr, flush=True)

    try:
        outcome = apply.run(
            core,
            plan,
            lambda p: _confirm(p, args.yes),
            report,
            journal,
            rollback=args.rollback,
        )
    except ApplyError as exc:
        if args.json:
            print_json({"outcome": "stopped", "message": word(exc)})
        return error(word(exc))
    result: dict[str, object] = {"outcome": outcome, "plan": plan.kind}
    made = registered(plan.kind)
    if made is not None and made.backend is BCACHE and made.effect == "makes" and outcome == "done":
        result["bcache_device"] = apply.bcache_device(core, plan)  # bcache-create's, or a disk's that joined a set
    if args.json:
        return print_json(result)
    print(f"{plan.title}: {outcome}.")
    if result.get("bcache_device"):
        print(f"The bcache device: {result['bcache_device']} (use this path; bcacheN numbers change between boots)")
    return 0


def _abandon(core: Core, path: Path) -> int:
    """Show what the journal's plan did, then record that it is abandoned."""
    journal = Journal(path)
    problem = journal.problem() if path.is_file() else f"{path} is not a journal file"
    what = problem or f"{journal.plan.title}; steps that ran: {', '.join(journal.steps_run()) or 'none'}"
    apply.abandon(core, path)
    print(f"Abandoned {path}: {what}. Nothing else was changed; the system stays as those steps left it.")
    return 0


def _confirm(plan: Plan, yes: bool) -> bool:
    """The user types the target device's name after seeing the preview (or passed --yes)."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise Refused("confirm-without-terminal")
    show(plan_preview(plan))
    return input(f"Type the device name to confirm ({plan.target}): ").strip() == plan.target
