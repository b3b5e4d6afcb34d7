"""Test the chain-of-thought length law on a lab model, where the mechanism is known.

`reasoning_study(family, preset)` trains (or loads) the lab model of a family and then does
what a researcher testing k* = Θ(√n · log(1/ε)) would do, with cotplan's own tools unchanged:

1. **The error grid.** `calibrate` answers every calibration item at every budget from 0 to
   past the full trace (`study_grid`), at several sizes n. The grid is the observed error
   e(n, k) with Wilson intervals, next to the blind reference
   (`cotplan.research.lab.reasoning.tasks.blind_error`: the best guess from what the cut trace
   wrote) and the planner's fitted curve.
2. **The planner's fit.** `BudgetPlanner` fits e(k, n) = e0 + (e_base − e0) ·
   exp(−max(k − k0, 0) / (c · n^α)) with item-bootstrap intervals; the same curve is refitted
   with α fixed at 1/2 and at 1 and compared by likelihood, and the free fit's deviance says
   whether the exponential shape describes the cells at all.
3. **The law, without the planner's model.** For each target ε the empirical k*(n, ε) is the
   smallest calibrated budget from which the observed error stays ≤ ε. Its growth in n is the
   slope β of log k* on log n (item-bootstrap interval); its growth in ε is read across the
   targets at the largest size. The √n law says β = 1/2 and k* ∝ log(1/ε).
4. **Held-out items.** New items (disjoint from the calibration set) are answered uncapped, at
   fixed caps, at the planned k*(n, ε) and by the per-item oracle (the smallest budget that
   answered that item right; a lucky guess counts), and compared by `compare_answers`.

`LabStudy.to_frame()` is the error grid; `constants_frame`, `law_frame`, `oracle_frame` and
`heldout` hold the rest, `verdict` says in words which law holds, and `report_rows()` gives rows
in the reproduction report's format (`cotplan.research.experiments.verdicts.ReportRow`), built in
`cotplan.research.lab.reasoning.report` (where `LabStudy` is defined) and re-exported here; its
charts are drawn by `cotplan.charts` (`cotplan.charts.save(study, folder)`).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
from scipy import stats

from cotplan.errors import InfeasibleTargetError, InputError
from cotplan.generate.budgeted import BudgetedAnswer, answers_frame, budgeted_answers
from cotplan.intervals import percentile_interval
from cotplan.planner.calibrate import CostUnknownWarning, calibrate
from cotplan.planner.fit import BudgetPlanner
from cotplan.planner.run import compare_answers, wilson_interval
from cotplan.research.experiments.verdicts import ReportRow
from cotplan.research.lab.reasoning.backend import LabBackend
from cotplan.research.lab.reasoning.report import LabStudy, law_sentence, study_report_rows
from cotplan.research.lab.reasoning.settings import STUDY_PRESETS, StudySettings
from cotplan.research.lab.reasoning.tasks import (
    STEP_TOKENS,
    blind_error,
    distinct_questions,
    get_lab_family,
    make_lab_tasks,
)
from cotplan.tasks.item import TaskItem

__all__ = [
    "STUDY_PRESETS",
    "LabStudy",
    "StudySettings",
    "empirical_budgets",
    "item_counts",
    "lab_report_rows",
    "oracle_budgets",
    "reasoning_study",
    "study_grid",
    "study_report_rows",
]


def study_grid(n: int, max_points: int = 60) -> list[int]:
    """Budgets for size n: every budget from 0 to 3n + 3 (the model ends on its own there),
    or, where that is more than `max_points`, every s-th one plus the last few (3n − 1: the
    last input copied; 3n: the trace complete; 3n + 2: the answer written, the end not yet;
    3n + 3), and four more up to 3n + 15: an over-thinker is still checking there, and its
    error stays where the settled answer put it (a model that ends at 3n + 2 answers them
    from the same run, at no extra cost)."""
    full = STEP_TOKENS * n
    stride = max(1, math.ceil((full + 4) / max_points))
    extra = {full + 6, full + 9, full + 12, full + 15}
    return sorted({*range(0, full + 4, stride), full - 1, full, full + 2, full + 3, *extra})


def _curves(frame: pd.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per size: the budgets and the items × budgets matrix of right answers (1/0)."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for n_value, group in frame.groupby("n"):
        table = group.pivot_table(index="item", columns="k", values="correct", aggfunc="mean")
        ks = table.columns.to_numpy(dtype=float)
        out[int(cast(Any, n_value))] = (ks, table.to_numpy(dtype=float))
    return out


def _first_budget(ks: np.ndarray, error: np.ndarray, eps: float) -> float:
    # The largest error at this budget or any larger one: the envelope a cap must clear.
    envelope = np.maximum.accumulate(error[::-1])[::-1]
    ok = np.flatnonzero(envelope <= eps + 1e-12)
    return float(ks[ok[0]]) if len(ok) else math.inf


def empirical_budgets(frame: pd.DataFrame, eps_grid: Sequence[float]) -> pd.DataFrame:
    """k*(n, ε) read off the observed errors: the smallest budget from which the error stays
    ≤ ε at every larger calibrated budget (inf when it never does). Columns n, eps, k."""
    rows = []
    for n, (ks, right) in _curves(frame).items():
        error = 1.0 - np.nanmean(right, axis=0)
        rows += [{"n": n, "eps": eps, "k": _first_budget(ks, error, eps)} for eps in eps_grid]
    return pd.DataFrame(rows, columns=["n", "eps", "k"])


def fitted_slope(ns: Sequence[float], ks: Sequence[float]) -> float:
    """Least-squares slope of log k* on log n over the sizes where k* is finite and > 0."""
    pairs = [(n, k) for n, k in zip(ns, ks, strict=True) if math.isfinite(k) and k > 0]
    if len({n for n, _ in pairs}) < 2:
        return math.nan
    x = np.log([float(n) for n, _ in pairs])
    y = np.log([float(k) for _, k in pairs])
    return float(np.polyfit(x, y, 1)[0])


def oracle_budgets(frame: pd.DataFrame) -> pd.DataFrame:
    """Per item: the smallest budget that answered it right (`oracle_k`, NaN when none did),
    and whether every larger budget was right too (`stable_k`: the smallest such budget)."""
    rows = []
    for item, group in frame.sort_values("k").groupby("item", sort=False):
        ks = group["k"].to_numpy()
        right = group["correct"].to_numpy(bool)
        stable = np.logical_and.accumulate(right[::-1])[::-1]
        rows.append(
            {
                "item": item,
                "n": int(group["n"].iloc[0]),
                "oracle_k": float(ks[right][0]) if right.any() else math.nan,
                "stable_k": float(ks[stable][0]) if stable.any() else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=["item", "n", "oracle_k", "stable_k"])


def _grid_frame(
    frame: pd.DataFrame, items: Sequence[TaskItem], planner: BudgetPlanner
) -> pd.DataFrame:
    by_id = {it.id: it for it in items}
    blind = frame.apply(lambda r: blind_error(by_id[str(r["item"])], int(r["k"])), axis=1)
    table = (
        frame.assign(wrong=~frame["correct"].astype(bool), blind=blind)
        .groupby(["n", "k"])
        .agg(answers=("wrong", "size"), wrong=("wrong", "sum"), blind=("blind", "mean"))
        .reset_index()
    )
    table["error"] = table["wrong"] / table["answers"]
    bounds = [
        wilson_interval(int(w), int(a))
        for w, a in zip(table["wrong"], table["answers"], strict=True)
    ]
    table["low"] = [b.low for b in bounds]
    table["high"] = [b.high for b in bounds]
    table["fitted"] = [
        float(planner.predict_error(n, k)) for n, k in zip(table["n"], table["k"], strict=True)
    ]
    info = get_lab_family(str(items[0].family))
    table["trace_tokens"] = [info.trace_tokens(int(n)) for n in table["n"]]
    return table[
        ["n", "k", "answers", "wrong", "error", "low", "high", "blind", "fitted", "trace_tokens"]
    ]


def _deviance(planner: BudgetPlanner) -> tuple[float, int, float]:
    """Deviance of the planner's fitted curve against the observed cells, its degrees of
    freedom and the χ² p-value (too eager: one item's answers are alike)."""
    cells = planner.observed_errors()
    wrong = cells["wrong"].to_numpy(float)
    total = cells["answers"].to_numpy(float)
    mu = np.clip(
        np.array([planner.predict_error(n, k) for n, k in zip(cells["n"], cells["k"], strict=True)])
        * total,
        1e-9,
        None,
    )
    mu = np.minimum(mu, total - 1e-9)
    with np.errstate(divide="ignore", invalid="ignore"):
        term1 = np.where(wrong > 0, wrong * np.log(wrong / mu), 0.0)
        right = total - wrong
        term2 = np.where(right > 0, right * np.log(right / (total - mu)), 0.0)
    deviance = float(2 * np.sum(term1 + term2))
    df = max(1, len(cells) - 5)
    return deviance, df, float(stats.chi2.sf(deviance, df))


def _law_fits(frame: pd.DataFrame, eps: float, seed: int) -> pd.DataFrame:
    rows = []
    laws: tuple[tuple[str, float | Literal["fit"]], ...] = (
        ("free α", "fit"),
        ("α = 1/2 (√n)", 0.5),
        ("α = 1 (linear)", 1.0),
    )
    for label, alpha in laws:
        planner = BudgetPlanner("paper", alpha=alpha, n_bootstrap=0, random_state=seed).fit(frame)
        loglik = float(getattr(planner, "loglik_", math.nan))
        free = 5 if alpha == "fit" else 4
        rows.append(
            {
                "law": label,
                "alpha": float(getattr(planner, "alpha_", math.nan)),
                "loglik": loglik,
                "aic": 2 * free - 2 * loglik,
                "status": planner.status_,
            }
        )
    table = pd.DataFrame(rows)
    table["delta_aic"] = table["aic"] - table["aic"].min()
    return table


def study_exponents(
    frame: pd.DataFrame, eps_grid: Sequence[float], n_bootstrap: int, seed: int
) -> pd.DataFrame:
    """Per ε: β, the slope of log k*_emp on log n, and the straight line k*_emp ≈ a · n + b
    (`per_input` = a: tokens per input; `offset` = b), with item-bootstrap percentile intervals
    (items resampled within each size)."""
    curves = _curves(frame)
    sizes = sorted(curves)
    rng = np.random.default_rng(seed)

    def budgets(pick: Callable[[np.ndarray], np.ndarray]) -> dict[float, list[float]]:
        out: dict[float, list[float]] = {eps: [] for eps in eps_grid}
        for n in sizes:
            ks, right = curves[n]
            error = 1.0 - np.nanmean(pick(right), axis=0)
            for eps in eps_grid:
                out[eps].append(_first_budget(ks, error, eps))
        return out

    point = budgets(lambda m: m)
    draws: dict[float, list[tuple[float, float]]] = {eps: [] for eps in eps_grid}
    for _ in range(n_bootstrap):
        resampled = budgets(lambda m: m[rng.integers(0, len(m), size=len(m))])
        for eps in eps_grid:
            draws[eps].append(
                (fitted_slope(sizes, resampled[eps]), _line(sizes, resampled[eps])[0])
            )
    rows = []
    for eps in eps_grid:
        pairs = np.array(draws[eps], dtype=float).reshape(-1, 2)
        betas, per_inputs = pairs[:, 0], pairs[:, 1]
        per_input, offset = _line(sizes, point[eps])
        rows.append(
            {
                "eps": float(eps),
                "beta": fitted_slope(sizes, point[eps]),
                **_interval(betas, "low", "high"),
                "per_input": per_input,
                **_interval(per_inputs, "per_input_low", "per_input_high"),
                "offset": offset,
                "sizes_reached": sum(math.isfinite(k) for k in point[eps]),
                "resamples": int(np.isfinite(betas).sum()),
            }
        )
    return pd.DataFrame(rows)


def _interval(values: np.ndarray, low: str, high: str) -> dict[str, float]:
    if np.isfinite(values).sum() < 10:
        return {low: math.nan, high: math.nan}
    interval = percentile_interval(values, 0.95)
    return {low: interval.low, high: interval.high}


def _line(ns: Sequence[float], ks: Sequence[float]) -> tuple[float, float]:
    """(slope, intercept) of k* = a · n + b over the sizes where k* is finite (NaN with fewer
    than two)."""
    pairs = [(float(n), float(k)) for n, k in zip(ns, ks, strict=True) if math.isfinite(k)]
    if len({n for n, _ in pairs}) < 2:
        return math.nan, math.nan
    slope, intercept = np.polyfit([n for n, _ in pairs], [k for _, k in pairs], 1)
    return float(slope), float(intercept)


def _heldout(
    backend: LabBackend,
    items: Sequence[TaskItem],
    calibration_grid: Callable[[int], list[int]],
    planner: BudgetPlanner,
    settings: StudySettings,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    sizes = sorted({int(it.n or 0) for it in items})
    info = get_lab_family(str(items[0].family))
    # Past the longest trace (an over-thinker's check pass included): the model ends by itself.
    uncapped = {n: info.max_trace(n) + 8 for n in sizes}
    plan_rows = []
    k_star: dict[int, int] = {}
    for n in sizes:
        try:
            budget = planner.budget(n, settings.eps)
            tokens = min(budget.tokens, uncapped[n])
            plan_rows.append(
                {
                    "n": n,
                    "eps": settings.eps,
                    "k_star": budget.k_star,
                    "low": budget.low,
                    "high": budget.high,
                    "tokens": tokens,
                    "note": budget.note,
                }
            )
        except InfeasibleTargetError as exc:
            tokens = uncapped[n]
            plan_rows.append(
                {
                    "n": n,
                    "eps": settings.eps,
                    "k_star": math.inf,
                    "low": math.nan,
                    "high": math.nan,
                    "tokens": tokens,
                    "note": str(exc),
                }
            )
        k_star[n] = tokens
    answers: dict[str, list[BudgetedAnswer]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CostUnknownWarning)
        for item in items:
            n = int(item.n or 0)
            budgets = sorted({*calibration_grid(n), *settings.caps, k_star[n], uncapped[n]})
            answers[item.id] = budgeted_answers(backend, item, budgets)

    def pick(k_of: Callable[[TaskItem], int]) -> list[BudgetedAnswer]:
        return [next(a for a in answers[it.id] if a.k == k_of(it)) for it in items]

    def oracle(item: TaskItem) -> int:
        right = [a.k for a in answers[item.id] if a.correct]
        return min(right) if right else 0

    baseline = "uncapped (9n + 9)" if info.overthinks else "uncapped (3n + 8)"
    policies: dict[str, list[BudgetedAnswer]] = {baseline: pick(lambda it: uncapped[it.n or 0])}
    for cap in settings.caps:
        policies[f"fixed cap {cap}"] = pick(_constant(cap))
    policies[f"planned k* (ε = {settings.eps:g})"] = pick(lambda it: k_star[it.n or 0])
    policies["oracle (per item)"] = pick(oracle)
    table = compare_answers(policies, baseline=baseline, n_bootstrap=2000, seed=settings.seed)
    frame = pd.concat(
        [answers_frame(rows).assign(policy=name) for name, rows in policies.items()],
        ignore_index=True,
    )
    plan = pd.DataFrame(plan_rows)
    planned = frame[frame["policy"] == f"planned k* (ε = {settings.eps:g})"]
    met = planned.groupby("n")["correct"].agg(["size", "sum"]).reset_index()
    plan = plan.merge(
        met.rename(columns={"size": "heldout_items", "sum": "heldout_right"}), on="n", how="left"
    )
    plan["heldout_error"] = 1 - plan["heldout_right"] / plan["heldout_items"]
    plan["heldout_error_high"] = [
        wilson_interval(int(i - r), int(i)).high
        for i, r in zip(plan["heldout_items"], plan["heldout_right"], strict=True)
    ]
    return table, frame, plan


def reasoning_study(
    family: str,
    preset: str | StudySettings = "standard",
    *,
    backend: LabBackend | None = None,
    progress: bool = False,
) -> LabStudy:
    """Run the study of one lab family (see the module docstring).

    `preset` is a `STUDY_PRESETS` name or `StudySettings`; `backend` reuses a loaded model
    (else the family's model is loaded, or trained and saved, with the settings' `train`).
    """
    info = get_lab_family(family)
    settings = (
        STUDY_PRESETS[preset] if isinstance(preset, str) and preset in STUDY_PRESETS else preset
    )
    if not isinstance(settings, StudySettings):
        raise InputError(
            f"must be one of {', '.join(STUDY_PRESETS)} or StudySettings, got {preset!r}",
            field="preset",
        )
    started = time.perf_counter()
    if backend is None:
        backend = LabBackend.for_family(info.name, settings.train)
    if backend.lab.family != info.name:
        raise InputError(
            f"the backend's model is for {backend.lab.family}, not {info.name}", field="backend"
        )
    trained = backend.lab.settings
    outside = [n for n in settings.sizes if not trained.n_min <= n <= trained.n_max]
    if outside:
        raise InputError(
            f"sizes {outside} are outside the sizes the model was trained on "
            f"({trained.n_min}..{trained.n_max})",
            field="sizes",
        )

    def grid(n: int) -> list[int]:
        return study_grid(n, settings.max_points)

    counts = {
        n: item_counts(info.name, n, settings.items, settings.held_out) for n in settings.sizes
    }
    items = [
        it
        for n in settings.sizes
        for it in make_lab_tasks(info.name, n=n, count=counts[n][0], seed=settings.seed)
    ]
    with warnings.catch_warnings():
        # The lab model has no price: its costs are NaN, which is what the frame should say.
        warnings.simplefilter("ignore", CostUnknownWarning)
        calibration = calibrate(backend, items, grid, progress=progress)
    frame = calibration.frame
    planner = BudgetPlanner(n_bootstrap=settings.n_bootstrap, random_state=settings.seed).fit(frame)
    report = planner.report()
    constants = report.to_frame()
    deviance, df, p_fit = (
        _deviance(planner) if planner.status_ == "helps" else (math.nan, 0, math.nan)
    )
    laws = _law_fits(frame, settings.eps, settings.seed)
    laws["deviance"] = [deviance, math.nan, math.nan]
    laws["deviance_df"] = [df, 0, 0]
    laws["deviance_p"] = [p_fit, math.nan, math.nan]
    eps_grid = sorted({*settings.eps_grid, settings.eps}, reverse=True)
    empirical = empirical_budgets(frame, eps_grid)
    empirical["planner_k"] = [
        _planned(planner, n, eps) for n, eps in zip(empirical["n"], empirical["eps"], strict=True)
    ]
    empirical["trace_tokens"] = [info.trace_tokens(int(n)) + 2 for n in empirical["n"]]
    sqrt_c = _sqrt_law_c(empirical)
    empirical["sqrt_law_k"] = [
        sqrt_c * math.sqrt(n) * math.log(1 / eps)
        for n, eps in zip(empirical["n"], empirical["eps"], strict=True)
    ]
    exponents = study_exponents(frame, eps_grid, settings.n_bootstrap, settings.seed)
    grid_table = _grid_frame(frame, items, planner)
    oracle = oracle_budgets(frame)
    held_items = [
        it
        for n in settings.sizes
        if counts[n][1] > 0
        for it in make_lab_tasks(
            info.name, n=n, count=counts[n][1], seed=settings.seed + 1, exclude=items
        )
    ]
    heldout, held_frame, plan = _heldout(backend, held_items, grid, planner, settings)
    law = law_sentence(exponents, empirical, grid_table)
    return LabStudy(
        family=info.name,
        model=backend.model,
        settings=settings,
        train_meta=dict(backend.lab.meta),
        calibration=frame,
        grid=grid_table,
        constants=constants,
        laws=laws,
        empirical=empirical,
        exponents=exponents,
        oracle=oracle,
        plan=plan,
        heldout=heldout,
        heldout_answers=held_frame,
        planner=planner,
        verdict=planner.verdict_,
        law=law,
        seconds=time.perf_counter() - started,
    )


def _constant(k: int) -> Callable[[TaskItem], int]:
    return lambda item: k


def item_counts(family: str, n: int, items: int, held_out: int) -> tuple[int, int]:
    """(calibration items, held-out items) at size n: as asked where enough distinct questions
    exist, else half of them each (parity of 4 bits has 16 questions)."""
    available = distinct_questions(family, n)
    if items + held_out <= available:
        return items, held_out
    calibration = min(items, max(1, available // 2))
    return calibration, min(held_out, available - calibration)


def _planned(planner: BudgetPlanner, n: int, eps: float) -> float:
    try:
        return float(planner.budget(n, eps).k_star)
    except InfeasibleTargetError:
        return math.inf


def _sqrt_law_c(empirical: pd.DataFrame) -> float:
    """The paper code's c: k* = c · √n · ln(1/ε) through the origin, fitted to the empirical
    k* (finite ones), so the table can show what the √n law would have planned."""
    use = empirical[np.isfinite(empirical["k"])]
    x = np.sqrt(use["n"].to_numpy(float)) * np.log(1 / use["eps"].to_numpy(float))
    y = use["k"].to_numpy(float)
    denominator = float(np.sum(x * x))
    return float(np.sum(x * y) / denominator) if denominator > 0 else math.nan


def lab_report_rows(
    families: Sequence[str] | None = None, preset: str | StudySettings = "quick"
) -> list[ReportRow]:
    """Run the study of each lab family (default: all four) with `preset` and return its
    rows for the reproduction report (see `study_report_rows`)."""
    from cotplan.research.lab.reasoning.tasks import lab_families

    names = list(families) if families is not None else list(lab_families)
    return study_report_rows([reasoning_study(name, preset) for name in names])
