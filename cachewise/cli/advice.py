"""`cachewise recommend`: which cache, of what size and mode, with what tunables, and why."""

from __future__ import annotations

import argparse

from advisor.errors import NOTHING
from cachewise.cli import common
from cachewise.cli.common import size
from cachewise.cli.output import error, print_json, show, warn
from cachewise.cli.phrases import CLI
from cachewise.core.advise import AdviceRequest, Declared, prepare, recommend
from cachewise.render import recommendation_report


def cmd_recommend(args: argparse.Namespace) -> int:
    data_size = size(args.data_size, "--data-size")
    budget = size(args.cache_size, "--cache-size")
    for name in ("hot_fraction", "read_share"):
        value = getattr(args, name)
        if value is not None and not 0 < value <= 1:
            return error(f"--{name.replace('_', '-')} must be between 0 and 1 (got {value:g}). {NOTHING}")
    declared = Declared(
        workload=args.workload,
        hot_fraction=args.hot_fraction,
        read_share=args.read_share,
        filesystem=args.fs,
        data_bytes=data_size,
        fast_mirrored=args.mirrored,
        accept_writeback_risk=args.accept_writeback_risk,
        reformat_ok=args.reformat_ok,
        cache_budget_bytes=budget,
        read_iops=args.read_iops,
    )
    request = AdviceRequest(args.slow, tuple(args.fast), trace=args.trace, declared=declared, kernel=args.kernel)
    prepared = prepare(common.core_for(args), request)
    for warning in prepared.warnings:
        warn(warning)
    rec = recommend(prepared.inputs)
    if args.json:
        return print_json(rec.to_json())
    show(recommendation_report(rec, [CLI.next_steps([step]) for step in rec.next]))
    return 0
