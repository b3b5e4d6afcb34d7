"""What the research commands print: progress bars, the table against the paper with each
verdict in its colour, a run's accounting, each experiment's own details, the reproduction
report, the positional-encoding ablation, the lab's k* studies and the reproduction plan.

Each renderer takes a result and a rich `Console` (a notebook can pass its own) and decides
nothing about the result.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cotplan.intervals import compact as fmt

__all__ = [
    "VERDICT_COLOURS",
    "frame_table",
    "progress",
    "render_ablation",
    "render_debias",
    "render_experiment",
    "render_law",
    "render_plan",
    "render_report",
    "render_rows",
    "render_run",
    "render_study",
    "render_study_rows",
    "render_training",
    "render_weights",
    "training_progress",
]


def progress(console: Console) -> Callable[[], contextlib.AbstractContextManager[Any]]:
    """A progress factory for `cotplan.research.runs`: each use opens one rich progress
    display, and its stage factory adds one bar per stage with predictions to read."""

    @contextlib.contextmanager
    def bars() -> Iterator[Callable[[str, int], Callable[[int], None] | None]]:
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, transient=False) as bar:

            def stage(name: str, total: int) -> Callable[[int], None] | None:
                if total <= 0:
                    return None
                task = bar.add_task(name, total=total)
                return lambda done: bar.advance(task, done)

            yield stage

    return bars


#: How each verdict of `cotplan.research.experiments.verdicts` is shown.
VERDICT_COLOURS = {
    "reproduced": "green",
    "not reproduced": "red",
    "not comparable (model)": "blue",
    "not comparable (scale)": "blue",
    "not testable": "yellow",
    "follows from averaging": "magenta",
    "not a model claim": "cyan",
    "cotplan check": "cyan",
}


def render_rows(frame: Any, title: str, console: Console) -> None:
    """Claims beside the paper's numbers, each verdict in its colour (⚠: a limit broken)."""
    table = Table(title=title, show_lines=False)
    for column in ("claim", "paper", "measured", "interval", "limit", "verdict"):
        table.add_column(column, overflow="fold")
    for row in frame.itertuples():
        colour = VERDICT_COLOURS.get(row.verdict, "yellow")
        flag = " ⚠" if row.breaks_limit else ""
        outcome = {"yes": ": holds", "no": ": fails"}.get(str(getattr(row, "holds", "")), "")
        table.add_row(
            escape(row.claim),
            escape(row.paper),
            escape(str(row.measured)),
            escape(str(row.interval)),
            escape(row.limit),
            f"[{colour}]{row.verdict}{outcome}{flag}[/]",
        )
    console.print(table)


def render_run(run: Any, console: Console) -> None:
    """A run's accounting (`RunInfo`): requests, cache hits, predictions, time."""
    if run.exact:
        console.print(f"{run.predictor}: exact reference, no model requests ({run.wall_s:.1f} s)")
        return
    console.print(
        f"{escape(run.predictor)}: {run.requests} model requests, {run.cache_hits} cache hits, "
        f"{run.predictions} predictions in {run.wall_s:.1f} s; mean covered mass "
        f"{fmt(run.mean_covered_mass)}"
        + (f"; {run.missing_candidates} with a candidate missing" if run.missing_candidates else "")
        + (f"; {run.retries} retries after failures" if run.retries else "")
    )


def _martingale(result: Any, console: Console) -> None:
    fits = result.fits_frame()
    console.print(
        fits[["predictor", "form", "A", "A_low", "A_high", "B", "r2", "adj_r2"]].to_string(
            index=False
        )
    )


def _order(result: Any, console: Console) -> None:
    console.print(result.to_frame().to_string(index=False))


def _entropy(result: Any, console: Console) -> None:
    from cotplan.research.experiments import laplace_threshold_table

    console.print(result.first_n_frame().to_string(index=False))
    console.print("Laplace, exact, per p (first n at 99% efficiency):")
    console.print(laplace_threshold_table().to_string(index=False))
    limit = result.limit
    console.print(
        f"Bayes mixture under a uniform prior (the best any predictor can do in expectation): "
        f"efficiency {limit['efficiency_at_n']:.4f} at n = 20, 99% first at n = "
        f"{fmt(limit['first_n'])}"
    )
    if result.efficiency_20_ci is not None:
        console.print(
            f"{escape(result.predictor)}: efficiency {result.efficiency_20:.4f} "
            f"{result.efficiency_20_ci} at n = 20; per-step excess exponent "
            f"{fmt(result.excess_exponent)} {result.excess_exponent_ci}"
        )


def _entropy_notes(result: Any, console: Console) -> None:
    for flag in result.flags:
        console.print(f"[red]limit broken:[/] {escape(flag)}")


def _falck(result: Any, console: Console) -> None:
    from cotplan.research.experiments.falck_reference import printed_side_by_side

    console.print("T1 and T2 per setting, bayes_icl's definition beside cotplan's exact band:")
    console.print(escape(printed_side_by_side(result.to_frame()).to_string(index=False)))
    console.print(f"T3 per n, the median over {result.contexts} context(s):")
    console.print(escape(result.t3.to_string(index=False)))


def _nothing(result: Any, console: Console) -> None:
    return None


_Show = Callable[[Any, Console], None]
#: Per experiment: what is printed before the table against the paper, its title, and after.
_EXPERIMENTS: dict[str, tuple[_Show, str, _Show]] = {
    "martingale": (_martingale, "Martingale gap vs the paper", _nothing),
    "order": (_order, "Order variance vs the paper", _nothing),
    "entropy": (_entropy, "Compression efficiency vs the paper", _entropy_notes),
    "falck": (_falck, "Falck et al.'s checks", _nothing),
}


def render_experiment(name: str, result: Any, console: Console) -> None:
    """One experiment's result: its details, the table against the paper, its run."""
    details, title, notes = _EXPERIMENTS[name]
    details(result, console)
    render_rows(result.versus_paper(), title, console)
    notes(result, console)
    render_run(result.run, console)


def render_debias(outcome: Any, console: Console) -> None:
    """Positional debiasing (`cotplan.research.runs.DebiasOutcome`): the martingale run that
    measured the gaps, the period found and what removing it changed, the table."""
    if outcome.gaps is not None:
        render_run(outcome.gaps.run, console)
    result = outcome.result
    console.print(
        f"{escape(outcome.name)}: period {result.period:.2f} (detected "
        f"{result.detected_period:.2f}, p = {fmt(result.p_value)}), harmonics explain "
        f"{fmt(result.explained)}, variance change {fmt(result.variance_change)}, position R² "
        f"{fmt(result.r2_before)} -> {fmt(result.r2_after)}"
    )
    render_rows(result.versus_paper(), "Positional debiasing vs the paper", console)


def render_report(result: Any, console: Console) -> None:
    """The reproduction report: every claim with its verdict, the tally, the requests."""
    render_rows(result.to_frame(), f"Reproduction report: {result.predictor}", console)
    console.print(escape(result.tally_line()))
    console.print(escape(result.capability()))
    console.print(f"{result.requests} model requests in total")


def render_ablation(result: Any, console: Console) -> None:
    """The positional-encoding ablation: one seed's (`PEAblationResult`) or the spread across
    training seeds (`PESeedsResult`, which has `seeds`)."""
    if hasattr(result, "seeds"):
        _spread(result, console)
        render_rows(result.versus_paper(), "Across seeds vs the paper (v2)", console)
        console.print(f"{len(result.seeds)} seeds in {result.wall_s:.1f} s")
        return
    _ablation(result, console)
    render_rows(result.versus_paper(), "Positional-encoding ablation vs the paper (v2)", console)
    console.print(f"{len(result.variants)} models in {result.wall_s:.1f} s")


def _spread(spread: Any, console: Console) -> None:
    console.print("Variance over orderings of P(1 | t/2 ones among t bits) across training seeds:")
    table = spread.spread()
    columns = ["model", "t", *[c for c in table.columns if c.startswith("variance_seed")]]
    columns += ["geometric_mean", "min", "max", "fold", "v2_variance"]
    console.print(table[columns].to_string(index=False, float_format=lambda v: f"{v:.3g}"))


_TRAINING = (
    *("model", "heldout_loss", "bayes_heldout_loss", "excess", "excess_se", "bayes_loss"),
    *("constant_loss", "steps_per_s", "s_within_0.001", "s_settled_0.001", "from_store"),
)


def _ablation(result: Any, console: Console) -> None:
    console.print("Held-out loss per bit (nats) beside the Bayes predictor's on the same bits:")
    console.print(result.training[list(_TRAINING)].to_string(index=False))
    console.print("Variance over orderings of P(1 | t/2 ones among t bits), float64:")
    wide = result.order.pivot(index="model", columns="t", values="variance")
    console.print(wide.reindex(list(result.labels)).to_string(float_format=lambda v: f"{v:.3g}"))
    console.print(
        result.martingale[
            ["model", "A", "A_low", "A_high", "B", "adj_r2", "mean_excess", "vs_none", "ref_A"]
        ].to_string(index=False)
    )


def frame_table(frame: pd.DataFrame, title: str, digits: int = 2) -> Table:
    """A data frame as a rich table, numbers right-aligned and rounded to `digits`."""
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column), justify="right")
    for row in frame.itertuples(index=False):
        table.add_row(*(escape(_cell(v, digits)) for v in row))
    return table


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if math.isinf(value):
            return "∞"
        if abs(value) < 1e-9:
            return "0"  # rounding noise of a fit (9.9e-16) reads as a number otherwise
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        if abs(value) < 10**-digits:
            return f"{value:.2g}"
        return f"{value:.{digits}f}"
    return str(value)


def render_training(result: Any, console: Console) -> None:
    """A lab training run (`cotplan.research.lab.reasoning.runs`): the estimate, or the model
    trained with what training measured, where its weights went and the time taken."""
    if hasattr(result, "per_step"):
        s = result.settings
        console.print(
            f"{s.family} {result.preset!r} (n = {s.n_min}..{s.n_max}, batch "
            f"{s.batch_size}, {result.threads} thread(s)): {result.per_step:.3f} s per step over "
            f"{result.steps} steps; its {s.steps} steps would take about "
            f"{result.per_step * s.steps / 60:.1f} min on this machine as loaded now"
        )
        return
    model = result.model
    console.print(f"{model.family} ({model.key[:12]}): {model.meta}")
    if result.exported is not None:
        console.print(f"wrote {result.exported}")
    console.print(f"finished in {result.seconds:.0f} s")


def training_progress(console: Console) -> Callable[[int, float], None]:
    """A training progress callback that prints the loss every 500 steps."""

    def show(step: int, loss: float) -> None:
        if step % 500 == 0:
            console.print(f"step {step}: loss {loss:.4f}")

    return show


_HELD_OUT = (
    *("policy", "items", "accuracy", "accuracy_low", "accuracy_high", "reasoning_tokens"),
    *("tokens_saved", "tokens_saved_low", "tokens_saved_high"),
)


def render_study(study: Any, console: Console) -> None:
    """One `LabStudy` the way `cotplan kstar-lab study` prints it."""
    meta = study.train_meta
    console.rule(f"[bold]{study.family}[/] ({study.model})")
    console.print(
        f"trained in {meta.get('train_seconds', '?')} s ({meta.get('parameters', '?')} "
        f"parameters); greedy accuracy with the full trace {meta.get('accuracy_full_trace')}, "
        f"without reasoning {meta.get('accuracy_no_reasoning')}"
    )
    grid = study.to_frame()
    picks = []
    for n, group in grid.groupby("n"):
        full = 3 * int(n)
        wanted = [0, full // 4, full // 2, 3 * full // 4, full - 1, full, full + 3]
        for k in sorted(set(wanted)):
            row = group[group["k"] == k]
            if len(row):
                picks.append(row.iloc[0])
    summary = pd.DataFrame(picks)[
        ["n", "k", "answers", "error", "low", "high", "blind", "fitted"]
    ].astype({"n": int, "k": int, "answers": int})
    console.print(frame_table(summary, "Error by size and budget (excerpt; low/high: Wilson 95%)"))
    console.print(escape(study.verdict))
    console.print(frame_table(study.constants_frame(), "Planner constants (95% item bootstrap)"))
    console.print(frame_table(study.laws, "The curve with α free, 1/2 and 1 (likelihood)"))
    console.print(frame_table(study.law_frame(), "k*(n, ε): observed, planned, full trace, √n law"))
    console.print(frame_table(study.exponents, "n-exponent β of the observed k* per ε"))
    console.print(frame_table(study.oracle_summary(), "Oracle per-item budget (calibration)", 1))
    console.print(frame_table(study.plan.drop(columns=["note"]), "Planned caps", 2))
    held_out = "Held-out items (paired bootstrap vs uncapped)"
    console.print(frame_table(study.heldout[list(_HELD_OUT)], held_out))
    console.print(f"[bold]law:[/] {escape(study.law)}")


def render_study_rows(rows: pd.DataFrame, console: Console) -> None:
    """The studies' rows of the reproduction report."""
    console.rule("reproduction report rows")
    columns = ["claim", "measured", "interval", "verdict"]
    console.print(frame_table(rows[columns], "k* on lab models"))


#: The columns `law` prints of the premise test, the k* table and the exponents.
_PREMISE_COLUMNS = (
    *("measure", "n", "items", "share_1", "share_2", "share_3"),
    *("c12", "c12_low", "c12_high", "c23", "c23_low", "c23_high"),
    *("c13", "c13_low", "c13_high", "premise"),
)
_BUDGET_COLUMNS = (
    *("n", "eps", "k", "low", "high", "k_robust", "robust_low", "robust_high"),
    *("full_trace", "in_domain"),
)
_EXPONENT_COLUMNS = ("measure", "reading", "eps", "beta", "low", "high", "sizes_reached", "law")
_DOMAIN_COLUMNS = (
    *("measure", "reading", "eps", "beta_domain", "low_domain", "high_domain"),
    *("sizes_in_domain", "law_domain"),
)
_CURVE_COLUMNS = ["n", "k", "items", "B", "B_low", "B_high", "B_gap", "error", "mechanism"]
_LAW_TITLES = {
    "curve": "B(k), its relative gap ε(k), the 0/1 error and the mechanism's reference (excerpt)",
    "premise": "the theorem's premise: B falls fastest first (shares of the drop B(0) − B(full "
    "trace) by third; cij: drop over third i minus over third j, with a t interval "
    "over items, 5%/3 per tail: fails at most 5% of the time where the premise holds)",
    "budgets": "k*(n, ε) on {measure}, relative ε (95% item bootstrap): raw (k: the gap "
    "stays ≤ ε) and robust (k_robust: its running median of three budgets does)",
    "exponents": "n-exponent of k* per ε over every size (95% item bootstrap; law: against the "
    "theorem's 1/2, or outside the theorem's premise where it fails at a size used)",
    "domain": "n-exponent of k* per ε over the sizes where (n, ε) lies in the theorem's domain",
    "eps_form": "form in ε: k*(small ε) / k*(large ε) per size against log(1/ε)'s ratio (95% "
    "item bootstrap, paired)",
}


def render_law(study: Any, sizes: Sequence[int], console: Console) -> None:
    """The law on the paper's terms (`LogLossStudy`) at `sizes`: B(k) (an excerpt), the
    premise, k*(n, ε) on B and on the error, the exponents, the form in ε, the domain."""
    curve = study.to_frame()
    step = curve.groupby("n")["k"].transform(lambda k: max(1, len(k) // 8))
    excerpt = curve[
        (curve.groupby("n").cumcount() % step == 0)
        | (curve["k"] == curve.groupby("n")["k"].transform("max"))
    ]
    console.rule(f"[bold]{study.family}[/] ({study.model}): B(k) in nats, 95% item bootstrap")
    console.print(frame_table(excerpt[_CURVE_COLUMNS], _LAW_TITLES["curve"], 3))
    premise = study.premise[list(_PREMISE_COLUMNS)]
    console.print(frame_table(premise, _LAW_TITLES["premise"], 3))
    budgets = study.budgets
    for measure in ("B", "error"):
        table = budgets[budgets["measure"] == measure][list(_BUDGET_COLUMNS)]
        console.print(frame_table(table, _LAW_TITLES["budgets"].format(measure=measure)))
    exponents = study.exponents
    console.print(frame_table(exponents[list(_EXPONENT_COLUMNS)], _LAW_TITLES["exponents"]))
    console.print(frame_table(exponents[list(_DOMAIN_COLUMNS)], _LAW_TITLES["domain"]))
    console.print(frame_table(study.eps_form, _LAW_TITLES["eps_form"]))
    domain = ", ".join(
        f"n = {n}: [{max(n**-0.25, 1 / study.vocab):.3f}, 0.5]"
        if max(n**-0.25, 1 / study.vocab) <= 0.5
        else f"n = {n}: empty"
        for n in sizes
    )
    console.print(
        escape(
            f"theorem's domain ε ∈ [max(n^−1/4, 1/V), 1/2] with the lab vocabulary V = "
            f"{study.vocab}: {domain}"
        )
    )
    console.print(f"[bold]law:[/] {escape(study.verdict())}")


_WEIGHT_COLUMNS = (
    *("family", "preset", "key", "SHA-256", "fits", "trained in", "full trace"),
    *("trace exact", "no reasoning"),
)


def render_weights(folder: str, records: Sequence[dict[str, Any]], console: Console) -> None:
    """The weights that ship (`shipped_weights`): key, checksum, whether they still fit."""
    table = Table(title=f"Shipped lab weights ({folder}/)")
    for column in _WEIGHT_COLUMNS:
        table.add_column(column)
    for record in records:
        meta = record.get("meta", {})
        table.add_row(
            str(record["family"]),
            str(record["preset"]),
            str(record["key"]),
            str(record["sha256"])[:12] + "…",
            "yes" if record["fits"] else "stale",
            f"{meta.get('train_seconds', '?')} s",
            _by_size(meta.get("accuracy_full_trace")),
            _by_size(meta.get("trace_exact")),
            _by_size(meta.get("accuracy_no_reasoning")),
        )
    console.print(table)


def _by_size(accuracies: object) -> str:
    """Accuracy per size as ``n = 1: 1.00, n = 8: 0.97``, not a dict's repr ("?" if missing)."""
    if not isinstance(accuracies, dict) or not accuracies:
        return "?"
    cells = []
    for n, value in sorted(accuracies.items(), key=lambda kv: int(kv[0])):
        cells.append(f"n = {n}: {value:.2f}" if isinstance(value, int | float) else f"n = {n}: ?")
    return escape(", ".join(cells))


def render_plan(plan: Any, console: Console) -> None:
    """A `ReproductionPlan` before it starts: each step's state, requests and estimate, then
    its command line and where its estimate comes from, the summary and the report folder."""
    from cotplan.research.experiments import PROMPT_LOGPROBS_CHANGE_NOTHING

    table = Table(title=f"cotplan reproduce: preset {plan.preset}, backend {escape(plan.backend)}")
    columns = ("step", "state", "requests at most", "estimate")
    for column in columns:
        table.add_column(column, justify="right" if column != "step" else "left")
    rows = plan.rows()
    for row in rows:
        table.add_row(*(escape(row[c]) for c in columns))
    console.print(table)
    # Commands and sources on lines of their own: a table column would fold them unreadably.
    for heading, key in (("commands:", "command"), ("estimates from:", "from")):
        console.print(heading, highlight=False)
        for row in rows:
            console.print(f"  {escape(row['step'])}: {escape(row[key])}", highlight=False)
    console.print(escape(plan.summary()), highlight=False)
    if plan.prompt_logprobs:
        unchanged = "; ".join(PROMPT_LOGPROBS_CHANGE_NOTHING.values())
        console.print(
            "--prompt-logprobs: martingale, debias and entropy read each sequence in one "
            f"request; the rest are unchanged ({escape(unchanged)})",
            highlight=False,
        )
    console.print(f"report folder: {escape(str(plan.out))}", highlight=False)
