"""The Recommend screen: the choice, its numbers, the curve with the chosen size marked, and a
Why panel where each reason shows the findings it rests on and their sources."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Checkbox, Footer, Header, OptionList, Select, Static
from textual.widgets.option_list import Option

from advisor.advice.findings import finding
from advisor.advice.model import Inputs, Reason, Recommendation, RecommendError
from advisor.advice.model import Option as Choice
from advisor.advice.workloads import WORKLOADS
from advisor.disks.devices import Inventory
from advisor.errors import CachewiseError
from cachewise.core import advise, plans
from cachewise.render import VERDICT_STYLE, config_table, prediction_curve
from screens.base import CoreScreen
from screens.flows.model import Flow
from screens.flows.steps import StepBar
from screens.phrases import TUI, WIPE, word
from screens.widgets import Curve, CurveChart


class Tick(Checkbox):
    """A checkbox that reads ticked or not without relying on colour: ✓ or blank (Textual's
    draws the same X in both states)."""

    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # noqa: N802 - Textual's name
        return "✓" if self.value else " "


MEASURED = "measured"
ASK_WORKLOAD = (
    "Choose the workload on the left, or open a trace of it with t on the Disks screen: without one, "
    "cachewise would be guessing. Nothing was changed."
)
AGAIN = "Making the recommendation again with your change…"
NOT_READY = (
    "The recommendation is being made again with your change: nothing was changed; press the key again once it shows."
)


def rec_curve(rec: Recommendation | None) -> Curve | None:
    """The curve the recommendation's prediction is read from (by SSD bytes), its cache's size
    marked: the same chart as `cachewise recommend` draws."""
    shown = prediction_curve(rec) if rec is not None else None
    if shown is None:
        return None
    view, mark = shown
    return Curve(view.sizes_bytes, view.hit_ratio, 1, mark, legend=view.label)


class RecommendScreen(CoreScreen):
    """Pick the workload and the platform facts on the left; the recommendation follows."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("a", "plan", "Plan it"),
        Binding("o", "other", "Other choice"),
    ]
    HELP = (
        "The recommendation for the slow device with the fast one(s): backend, cache size, mode and "
        "tunables, the predicted hit ratio and warm-up, and why, each reason with its published source "
        "(highlight it in the Why list). The alternatives (○) are real choices: o steps through them (and back "
        "to the recommendation), or Enter on one in the Why list makes it the cache to plan. Change the workload, "
        "the file "
        "system or the checkboxes on the left and it is made again. a previews the plan (or, in Plan only, "
        "saves it); nothing changes before you confirm."
    )

    def __init__(self, inputs: Inputs, inventory: Inventory | None = None, flow: Flow | None = None) -> None:
        super().__init__()
        self.base = inputs
        self.inventory = inventory
        self.flow = flow
        self.recommendation: Recommendation | None = None
        self.choice: Choice | None = None  # a runner-up chosen instead of the recommendation
        self._reasons: list[tuple[str, Reason]] = []
        self._options: dict[int, Choice] = {}
        self._generation = 0
        self._shown = 0  # the generation of the recommendation (or error) on the screen

    def compose(self) -> ComposeResult:
        choices: list[tuple[str, str]] = []
        if self.base.analysis is not None:
            choices.append((f"measured: {self.base.analysis.source}", MEASURED))
        choices += [(wc.label, key) for key, wc in WORKLOADS.items()]
        initial = MEASURED if self.base.analysis is not None else (self.base.workload or Select.NULL)
        fs = self.base.filesystem or (self.base.slow.fs_type if self.base.slow.fs_type in ("ext4", "xfs") else "other")
        yield Header()
        if self.flow is not None:
            yield StepBar(self.flow, "Recommendation")
        with Horizontal(id="recommend"):
            # Scrolls: at 80x24 the checkboxes are below the fold, and focus must bring them into view.
            with VerticalScroll(id="recommend-form"):
                yield Static(
                    f"[b]Slow[/]: {self.base.slow.path} ({self.base.slow.device_class})\n"
                    + "\n".join(f"[b]Fast[/]: {f.path} ({f.device_class})" for f in self.base.fast)
                )
                yield Static("Workload")
                yield Select(
                    choices, value=initial, allow_blank=initial is Select.NULL, prompt="choose…", id="workload"
                )
                yield Static("File system")
                yield Select(
                    [("ext4", "ext4"), ("XFS", "xfs"), ("other", "other")], value=fs, allow_blank=False, id="fs"
                )
                yield Tick("SSDs mirrored", self.base.fast_mirrored, id="mirrored")
                yield Tick("Accept writeback risk", self.base.accept_writeback_risk, id="accept")
                yield Tick("Reformat allowed (bcache)", self.base.reformat_ok, id="reformat")
                yield Tick(WIPE, False, id="wipe")
            with VerticalScroll(id="recommend-result"):
                yield Static("Working out a recommendation…", id="rec-summary")
                yield Static("", id="rec-choice")
                yield Static("", id="rec-config")
                yield CurveChart(id="rec-curve")
                yield Static("[b]Why[/] (select a reason to see its sources)", id="why-title")
                yield OptionList(id="why")
                yield Static("", id="why-source")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_recommendation()

    def current_inputs(self) -> Inputs:
        workload = self.query_one("#workload", Select).value
        fs = self.query_one("#fs", Select).value
        measured = workload == MEASURED
        return replace(
            self.base,
            analysis=self.base.analysis if measured else None,
            workload=None if measured or workload is Select.NULL else workload,  # type: ignore[arg-type]
            filesystem=fs,  # type: ignore[arg-type]
            fast_mirrored=self.query_one("#mirrored", Checkbox).value,
            accept_writeback_risk=self.query_one("#accept", Checkbox).value,
            reformat_ok=self.query_one("#reformat", Checkbox).value,
        )

    @on(Select.Changed)
    @on(Checkbox.Changed)
    def _inputs_changed(self, event: Select.Changed | Checkbox.Changed) -> None:
        if event.control.id != "wipe":  # what the plan may destroy changes the plan, not the advice
            self.refresh_recommendation()

    def refresh_recommendation(self) -> None:
        self._generation += 1
        if self.recommendation is not None:  # shown until the new one comes, but not to act on
            self.query_one("#rec-summary", Static).update(Text(AGAIN, style="dim"))
        self._compute(self.current_inputs(), self._generation)

    @property
    def pending(self) -> bool:
        """Whether the recommendation on the screen is being made again with changed inputs."""
        return self._shown != self._generation

    @work(thread=True, group="recommend", description="The recommendation", exit_on_error=False)
    def _compute(self, inputs: Inputs, generation: int) -> None:
        try:
            rec = advise.recommend(inputs)
        except RecommendError as exc:
            message = ASK_WORKLOAD if exc.code == "no-workload" else word(exc)
            self.app.call_from_thread(self._show_error, message, generation)
            return
        except Exception:
            # any other failure ends the wait too (worker_failed says what went wrong)
            self.app.call_from_thread(self._show_error, "The recommendation could not be made.", generation)
            raise
        self.app.call_from_thread(self._show, rec, generation)

    def _show_error(self, message: str, generation: int) -> None:
        if generation != self._generation:  # a newer choice supersedes this one
            return
        self._shown = generation
        self.recommendation = self.choice = None
        self.query_one("#rec-summary", Static).update(Text(message, style="red"))
        self.query_one("#rec-choice", Static).update("")
        self.query_one("#rec-config", Static).update("")
        self.query_one("#rec-curve", CurveChart).show(None)

    def _show(self, rec: Recommendation, generation: int) -> None:
        if generation != self._generation:  # superseded while it was on its way
            return
        self._shown = generation
        self.recommendation = rec
        # The alternative chosen before the inputs changed stays chosen when the new advice still
        # offers a cache of the same backend and mode.
        before = self.choice.config if self.choice is not None else None
        self.choice = next(
            (
                o
                for o in rec.runner_ups
                if before is not None
                and o.config is not None
                and (o.config.backend, o.config.mode) == (before.backend, before.mode)
            ),
            None,
        )
        self.query_one("#rec-summary", Static).update(Text(rec.summary, style=VERDICT_STYLE[rec.verdict]))
        self._show_choice()
        nexts = [("next", Reason(f"Next: {TUI.next_steps([step])}")) for step in rec.next]
        self._reasons = (
            [("why", r) for r in rec.reasons]
            + [("warning", r) for r in rec.warnings]
            + nexts
            + [
                ("option", Reason(f"{o.summary}; {o.tradeoff}" if o.tradeoff else o.summary, o.findings))
                for o in rec.runner_ups
            ]
        )
        first = len(rec.reasons) + len(rec.warnings) + len(nexts)
        self._options = {first + i: o for i, o in enumerate(rec.runner_ups)}
        why = self.query_one("#why", OptionList)
        why.clear_options()
        for kind, r in self._reasons:
            prefix = {"why": "• ", "warning": "⚠ ", "next": "→ ", "option": "○ "}[kind]
            style = {"why": "", "warning": "yellow", "next": "cyan", "option": "dim"}[kind]
            why.add_option(
                Option(Text(prefix + r.text + (f"  [{', '.join(r.findings)}]" if r.findings else ""), style=style))
            )
        why.highlighted = 0 if self._reasons else None

    @property
    def chosen(self) -> Recommendation | None:
        """The recommendation, or the runner-up the user chose instead, as the cache to plan."""
        rec, choice = self.recommendation, self.choice
        if rec is None or choice is None:
            return rec
        return replace(rec, verdict=choice.verdict, summary=choice.summary, config=choice.config)

    def _show_choice(self) -> None:
        rec, choice = self.recommendation, self.choice
        if rec is None:
            return
        shown = self.chosen
        assert shown is not None
        self.query_one("#rec-choice", Static).update(
            Text.assemble(
                ("Your choice instead: ", "bold cyan"),
                choice.summary,
                (f" ({choice.tradeoff})" if choice.tradeoff else "", "yellow"),
                ("  Enter on it again returns to the recommendation.", "dim"),
            )
            if choice is not None
            else ""
        )
        self.query_one("#rec-config", Static).update(config_table(shown.config) if shown.config else "")
        curve = rec_curve(shown)
        if curve is not None and choice is not None:
            curve = replace(curve, mark_label="your choice")
        self.query_one("#rec-curve", CurveChart).show(curve)

    @on(OptionList.OptionSelected, "#why")
    def _option_chosen(self, event: OptionList.OptionSelected) -> None:
        """Enter on an alternative makes it the choice; on the chosen one, back to the recommendation."""
        option = self._options.get(event.option_index)
        if option is None:
            return
        if self.pending:
            self.notify(NOT_READY, severity="warning")
            return
        self.choice = None if option is self.choice else option
        self._show_choice()

    def action_other(self) -> None:
        """The next alternative that sets up a cache, then the recommendation again."""
        rec = self.recommendation
        if rec is None:
            self.notify("The recommendation is not ready yet: there is nothing to choose from.", severity="warning")
            return
        if self.pending:
            self.notify(NOT_READY, severity="warning")
            return
        caches = [o for o in rec.runner_ups if o.config is not None]
        if not caches:
            self.notify("There is no other cache to choose here.", severity="warning")
            return
        at = caches.index(self.choice) + 1 if self.choice in caches else 0
        self.choice = caches[at] if at < len(caches) else None
        self._show_choice()

    def action_plan(self) -> None:
        """Turn the chosen cache into a plan and preview it: to apply on confirmation, or (Plan
        only) to save."""
        rec, inv = self.chosen, self.inventory
        if self.pending and self.recommendation is not None:
            self.notify(NOT_READY, severity="warning")
            return
        if rec is None or inv is None:
            self.notify("There is no recommendation to set up yet.", severity="warning")
            return
        wipe = self.query_one("#wipe", Checkbox).value
        try:
            plan = plans.recommended(
                self.core, inv, rec, self.base.slow.path, [f.path for f in self.base.fast], wipe=wipe
            )
        except CachewiseError as exc:
            self.refuse(exc, "error")
            if exc.code == "writeback-not-accepted":
                self.query_one("#accept", Checkbox).focus()  # the box the refusal names, one key away
            return
        if self.flow is not None and self.flow.kind == "plan":
            self.nav.save_plan(self.flow, plan)
            return
        self.nav.apply(plan, flow=self.flow, curve=rec_curve(rec))

    @on(OptionList.OptionHighlighted, "#why")
    def _reason_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if not 0 <= event.option_index < len(self._reasons):
            return
        _, reason = self._reasons[event.option_index]
        text = Text()
        for fid in reason.findings:
            f = finding(fid)
            text.append_text(Text.assemble((fid, "bold"), ": ", f.text, "\n", (f"Source: {f.citation}", "dim"), "\n"))
        self.query_one("#why-source", Static).update(text)
