"""The length law on the paper's own terms: the log-loss B(k) and a relative ε.

The paper (v1 §4) states k* = Θ(√n · log(1/ε)) for B(k) = −log P(answer | context, k CoT
tokens), with ε = (B(k) − B_opt) / (B(0) − B_opt) the share of the achievable improvement
still missing, valid for ε in [max(n^−1/4, 1/V), 1/2] (V the vocabulary). `logloss_study`
measures exactly that on a lab backend:

- per item and budget k, the model's own greedy trace is cut at k tokens, ``Answer:`` is
  forced (the same transcript `budgeted_answer` sends), and the backend's `next_token_probs`
  gives P(correct answer) over the family's possible answers (`raw`: the model's own softmax
  probability, not renormalised). B(k) = mean over items of −ln P (nats); the 0/1 error beside
  it is that of the most probable candidate;
- B_opt is the model's B with its full trace (the largest budget); ε(k) = (B(k) − B_opt) /
  (B(0) − B_opt), and likewise for the 0/1 error;
- k*(n, ε), read two ways (`cotplan.research.lab.reasoning.kstar_reading`): raw, the smallest budget
  from which the relative gap stays ≤ ε, and robust, the smallest from which its running
  median of three budgets does (one budget's spike cannot set it); both with item-bootstrap
  intervals (items resampled within each size, B(0) and B_opt recomputed per resample);
- per ε and reading, the n-exponent of k* (slope of log k* on log n) with its interval, and
  whether (n, ε) lies in the theorem's domain;
- per size, the theorem's premise on the shape of the curve
  (`cotplan.research.lab.reasoning.premise`: B falls fastest first), tested with t intervals over
  the items (the 0/1 error's curve gets the same shape test); the law's verdict (`law_verdict`)
  reads "outside the theorem's premise" wherever it fails at a size the exponent is read over.

`LogLossStudy.to_frame()` is the curve per (n, k); `budgets`, `exponents`, `eps_form` and
`premise` hold the law.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from cotplan.errors import InputError
from cotplan.generate.budgeted import DEFAULT_PROMPT
from cotplan.intervals import percentile_interval
from cotplan.research.lab.reasoning.backend import LabBackend
from cotplan.research.lab.reasoning.kstar_reading import raw_first_budget, robust_first_budget
from cotplan.research.lab.reasoning.premise import (
    OUTSIDE_PREMISE,
    law_verdict,
    premise_summary,
    premise_test,
)
from cotplan.research.lab.reasoning.study import fitted_slope
from cotplan.research.lab.reasoning.tasks import (
    distinct_questions,
    get_lab_family,
    make_lab_tasks,
    mechanism_error,
)
from cotplan.tasks.item import TaskItem

__all__ = [
    "DEFAULT_EPS",
    "EXPONENT_RESOLUTION",
    "LogLossStudy",
    "answer_candidates",
    "eps_form_word",
    "in_domain",
    "law_verdict",
    "logloss_study",
    "n_form",
    "relative_budgets",
]

#: Relative targets: 0.5 and 0.4 lie in the theorem's domain from n = 16 and n = 40 on.
DEFAULT_EPS: tuple[float, ...] = (0.5, 0.4, 0.3, 0.2, 0.1, 0.05)
_FLOOR = 1e-12


def in_domain(n: int, eps: float, vocab: int) -> bool:
    """Whether ε lies in Theorem 4.5's domain [max(n^−1/4, 1/V), 1/2] at size n."""
    return max(n**-0.25, 1.0 / vocab) <= eps + 1e-12 and eps <= 0.5 + 1e-12


def answer_candidates(family: str, n: int) -> list[str]:
    """Every answer a question of `family` at size `n` can have (the words to score)."""
    info = get_lab_family(family)
    name = info.base or info.name
    if info.choices:
        return list(info.choices)
    if name == "lab-sum":
        return [str(s) for s in range(9 * n + 1)]
    if name == "lab-bits":
        return sorted(
            {str(math.floor(100 * (c + 1) / (n + 2) + 0.5)) for c in range(n + 1)}, key=int
        )
    return ["0", "1"]


def _transcript(item: TaskItem, trace: str, k: int) -> list[dict[str, str]]:
    """What `budgeted_answer` sends for a forced answer after a trace cut at k tokens."""
    question = str(item.prompt)
    if k == 0:
        return [{"role": "user", "content": f"{question}\n{DEFAULT_PROMPT.direct}"}]
    cut = " ".join(trace.split()[:k])
    return [
        {"role": "user", "content": f"{question}\n{DEFAULT_PROMPT.instruction}"},
        {"role": "assistant", "content": cut},
        {"role": "user", "content": DEFAULT_PROMPT.force},
    ]


#: The two readings of k* off the relative gap (`cotplan.research.lab.reasoning.kstar_reading`).
READINGS = {"raw": raw_first_budget, "robust": robust_first_budget}


def _relative(values: np.ndarray) -> np.ndarray:
    """(v(k) − v_opt) / (v(0) − v_opt), v_opt the value at the largest budget (NaN when the
    budget buys nothing: v(0) ≤ v_opt)."""
    start, best = values[0], values[-1]
    if not start - best > 1e-12:
        return np.full_like(values, np.nan)
    out: np.ndarray = (values - best) / (start - best)
    return out


def relative_budgets(
    ks: Sequence[float] | np.ndarray,
    values: np.ndarray,
    eps_grid: Sequence[float],
    reading: str = "raw",
) -> list[float]:
    """k*(ε) for each ε: the smallest budget from which the relative gap of the curve
    `values` (over `ks`, the first budget 0, the last the full trace) stays ≤ ε; `reading`
    "robust" reads its running median of three budgets instead (`READINGS`)."""
    gap = _relative(np.asarray(values, dtype=float))
    if np.isnan(gap).all():
        return [math.nan for _ in eps_grid]
    first = READINGS[reading]
    return [first(np.asarray(ks, dtype=float), gap, eps) for eps in eps_grid]


@dataclass(frozen=True)
class LogLossStudy:
    """B(k) and the 0/1 error per (n, k), k*(n, ε) on both with relative ε, and the law."""

    family: str
    model: str
    vocab: int
    eps_grid: tuple[float, ...]
    answers: pd.DataFrame = field(repr=False)
    curve: pd.DataFrame = field(repr=False)
    budgets: pd.DataFrame = field(repr=False)
    exponents: pd.DataFrame = field(repr=False)
    #: Per measure and size: k*(small ε) / k*(large ε) with its interval, against the ratio
    #: log(1/ε) predicts; the pair over the whole grid and the pair inside the domain.
    eps_form: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    #: Per measure and size: the theorem's premise on the curve's shape (`premise_test`).
    premise: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    seconds: float = 0.0

    def to_frame(self) -> pd.DataFrame:
        """Per (n, k): B(k) in nats with its item-bootstrap interval, the 0/1 error, the
        relative gaps of both, and the mechanism's reference error."""
        return self.curve.copy()

    def save(self, folder: str | Path) -> list[Path]:
        from cotplan.io import write_csv

        out = Path(folder).expanduser()
        out.mkdir(parents=True, exist_ok=True)
        return [
            write_csv(self.answers, out / "logloss_answers.csv"),
            write_csv(self.curve, out / "logloss_curve.csv"),
            write_csv(self.budgets, out / "logloss_budgets.csv"),
            write_csv(self.exponents, out / "logloss_exponents.csv"),
            write_csv(self.eps_form, out / "logloss_eps_form.csv"),
            write_csv(self.premise, out / "logloss_premise.csv"),
        ]

    def premise_text(self) -> str:
        """Where the theorem's premise on the curve's shape holds, fails or is not testable,
        per measure (`cotplan.research.lab.reasoning.premise.premise_summary`)."""
        return premise_summary(self.premise)

    def verdict(self) -> str:
        """The law in words: the premise test first, then per measure and reading (raw k*,
        and robust k*: `cotplan.research.lab.reasoning.kstar_reading`) its form in n over every size
        and, with the law's verdict (`law_verdict`), over the sizes where ε lies in the
        theorem's domain, and its form in ε, each with its interval."""
        parts = [self.premise_text()]
        for measure in ("B", "error"):
            for reading in READINGS:
                label = measure if reading == "raw" else f"{measure} (robust k*)"
                parts += self._reading_text(measure, reading, label)
        inside = self.budgets[self.budgets["in_domain"] & (self.budgets["measure"] == "B")]
        cells = ", ".join(f"(n = {r.n}, ε = {r.eps:g})" for r in inside.itertuples())
        parts.append(f"inside the theorem's domain: {cells or 'none of the tested (n, ε)'}")
        return "; ".join(parts)

    def _reading_text(self, measure: str, reading: str, label: str) -> list[str]:
        exponents = self.exponents
        rows = exponents[(exponents["measure"] == measure) & (exponents["reading"] == reading)]
        finite = rows[np.isfinite(rows["beta"])]
        if finite.empty:
            return [f"{label}: no exponent (k* reached fewer than two sizes)"]
        text = ", ".join(
            f"ε = {r.eps:g}: n^{r.beta:.2f} [{r.low:.2f}, {r.high:.2f}] ({n_form(r.low, r.high)})"
            for r in finite.itertuples()
        )
        parts = [f"{label}: k* grows as {text}"]
        domain = finite[np.isfinite(finite["beta_domain"])]
        if not domain.empty:
            text = ", ".join(
                f"ε = {r.eps:g} over {r.sizes_in_domain} sizes: n^{r.beta_domain:.2f} "
                f"[{r.low_domain:.2f}, {r.high_domain:.2f}] "
                f"({n_form(r.low_domain, r.high_domain)}; {r.law_domain})"
                for r in domain.itertuples()
            )
            parts.append(f"{label} inside the domain: {text}")
        form = self.eps_form
        if not form.empty:
            mine = form[
                (form["measure"] == measure)
                & (form["reading"] == reading)
                & np.isfinite(form["ratio"])
            ]
            top = mine[mine["n"] == mine["n"].max()] if not mine.empty else mine
            for r in top.itertuples():
                where = "inside the domain" if r.in_domain else "over the grid"
                outside = f"; {OUTSIDE_PREMISE}" if r.premise == "fails" else ""
                parts.append(
                    f"{label} in ε at n = {r.n} ({where}): k*(ε = {r.eps_small:g}) / "
                    f"k*(ε = {r.eps_large:g}) = {r.ratio:.2f} [{r.low:.2f}, {r.high:.2f}]; "
                    f"log(1/ε) predicts {r.predicted:.2f} ({eps_form_word(r)}{outside})"
                )
        return parts


#: How far an n-exponent may sit from 1/2 or 1 and still count as that law: k* is read on
#: whole tokens, and an offset of one or two tokens (k* = 3n − 1 or 3n + 2 from n = 4 to 16)
#: moves the log-log slope by up to about 0.08.
EXPONENT_RESOLUTION = 0.1


def n_form(low: float, high: float) -> str:
    """What an n-exponent's interval says of √n (exponent 1/2) against linear (1), each
    allowed `EXPONENT_RESOLUTION` either side."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "no interval"
    tol = EXPONENT_RESOLUTION
    holds_sqrt = low - tol <= 0.5 <= high + tol
    holds_linear = low - tol <= 1.0 <= high + tol
    if holds_sqrt and holds_linear:
        return "cannot tell √n from linear"
    if holds_sqrt:
        return "√n; linear excluded"
    if holds_linear:
        return "linear; √n excluded"
    return "neither √n nor linear"


def eps_form_word(row: Any) -> str:
    """Whether a ratio k*(small ε) / k*(large ε)'s interval holds log(1/ε)'s prediction."""
    if not (math.isfinite(row.low) and math.isfinite(row.high)):
        return "no interval"
    if row.low - 1e-6 <= row.predicted <= row.high + 1e-6:
        return "consistent with log(1/ε)"
    return "log(1/ε) excluded: k* grows " + (
        "more slowly" if row.high < row.predicted else "faster"
    )


def _interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of the finite draws; none from fewer than 10 of them."""
    if np.isfinite(values).sum() < 10:
        return math.nan, math.nan
    interval = percentile_interval(values)
    return interval.low, interval.high


class LawTables(NamedTuple):
    """What `logloss_curve_rows` reads off the per-item answers (see `LogLossStudy`)."""

    curve: pd.DataFrame
    budgets: pd.DataFrame
    exponents: pd.DataFrame
    eps_form: pd.DataFrame
    premise: pd.DataFrame


def _bounds(draws: list[np.ndarray], j: int) -> tuple[float, float]:
    if not draws:
        return math.nan, math.nan
    column = np.array([d[j] for d in draws])
    return float(np.percentile(column, 2.5)), float(np.percentile(column, 97.5))


def logloss_curve_rows(
    frame: pd.DataFrame,
    eps_grid: Sequence[float],
    n_bootstrap: int,
    seed: int,
    vocab: int,
    *,
    mechanism: bool = True,
) -> LawTables:
    rng = np.random.default_rng(seed)
    curve_rows: list[dict[str, Any]] = []
    budget_rows: list[dict[str, Any]] = []
    premise_rows: list[dict[str, Any]] = []
    premise_of: dict[tuple[str, int], str] = {}
    draws: dict[tuple[str, str, float], list[list[float]]] = {}
    sizes = sorted(int(n) for n in frame["n"].unique())
    point_k: dict[tuple[str, str, float], list[float]] = {}
    for n in sizes:
        group = frame[frame["n"] == n]
        loss = group.pivot_table(index="item", columns="k", values="loss", aggfunc="mean")
        wrong = group.pivot_table(index="item", columns="k", values="wrong", aggfunc="mean")
        ks = loss.columns.to_numpy(dtype=float)
        loss_m, wrong_m = loss.to_numpy(float), wrong.to_numpy(float)
        points = {"B": loss_m.mean(axis=0), "error": wrong_m.mean(axis=0)}
        boot: dict[str, list[np.ndarray]] = {"B": [], "error": []}
        for _ in range(n_bootstrap):  # the only draws: every reading uses the same resamples
            rows = rng.integers(0, len(loss_m), size=len(loss_m))
            boot["B"].append(loss_m[rows].mean(axis=0))
            boot["error"].append(wrong_m[rows].mean(axis=0))
        b_point, e_point = points["B"], points["error"]
        gap_b, gap_e = _relative(b_point), _relative(e_point)
        for j, k in enumerate(ks):
            b_low, b_high = _bounds(boot["B"], j)
            curve_rows.append(
                {
                    "n": n,
                    "k": int(k),
                    "items": len(loss_m),
                    "B": float(b_point[j]),
                    "B_low": b_low,
                    "B_high": b_high,
                    "B_gap": float(gap_b[j]),
                    "error": float(e_point[j]),
                    "error_gap": float(gap_e[j]),
                    # A served model's task has no lab mechanism to compare with.
                    "mechanism": mechanism_error(str(group["family"].iloc[0]), n, int(k))
                    if mechanism
                    else math.nan,
                }
            )
        for measure, values in points.items():
            shape = premise_test(ks, loss_m if measure == "B" else wrong_m)
            premise_of[(measure, n)] = shape.verdict
            premise_rows.append({"measure": measure, "n": n, **shape.as_row()})
            read: dict[str, tuple[list[float], np.ndarray]] = {}
            for reading in READINGS:
                point = relative_budgets(ks, values, eps_grid, reading)
                per_draw = [relative_budgets(ks, b, eps_grid, reading) for b in boot[measure]]
                read[reading] = (point, np.array(per_draw, dtype=float).reshape(-1, len(eps_grid)))
            for i, eps in enumerate(eps_grid):
                row: dict[str, Any] = {"measure": measure, "n": n, "eps": float(eps)}
                for reading, (point, matrix) in read.items():
                    low, high = _interval(matrix[:, i])
                    key = "k" if reading == "raw" else f"k_{reading}"
                    prefix = "" if reading == "raw" else f"{reading}_"
                    row.update({key: point[i], f"{prefix}low": low, f"{prefix}high": high})
                    point_k.setdefault((measure, reading, eps), []).append(point[i])
                    draws.setdefault((measure, reading, eps), []).append(list(matrix[:, i]))
                row.update(
                    full_trace=int(ks[-1]),
                    B0_minus_Bopt=float(values[0] - values[-1]),
                    premise=shape.verdict,
                )
                budget_rows.append(row)
    exponents = _exponent_rows(sizes, point_k, draws, premise_of, vocab)
    eps_form = _eps_forms(sizes, eps_grid, point_k, draws, premise_of, vocab=vocab)
    return LawTables(
        pd.DataFrame(curve_rows),
        pd.DataFrame(budget_rows),
        exponents,
        eps_form,
        pd.DataFrame(premise_rows),
    )


def _exponent_rows(
    sizes: Sequence[int],
    point_k: dict[tuple[str, str, float], list[float]],
    draws: dict[tuple[str, str, float], list[list[float]]],
    premise_of: dict[tuple[str, int], str],
    vocab: int,
) -> pd.DataFrame:
    """Per measure, reading and ε: the n-exponent of k* over every size and over the sizes
    in the theorem's domain, each with its interval and the law's verdict (`law_verdict`)."""
    exponent_rows = []
    for (measure, reading, eps), ks_point in sorted(
        point_k.items(), key=lambda kv: (kv[0][0] != "B", kv[0][1] != "raw", -kv[0][2])
    ):
        per_draw = np.array(draws[(measure, reading, eps)], dtype=float)  # sizes × resamples
        betas = [fitted_slope(sizes, list(per_draw[:, r])) for r in range(per_draw.shape[1])]
        low, high = _interval(np.array(betas, dtype=float))
        # The same slope over only the sizes where (n, ε) lies in the theorem's domain.
        inside = [i for i, n in enumerate(sizes) if in_domain(n, eps, vocab)]
        sub_sizes = [sizes[i] for i in inside]
        domain_betas = [
            fitted_slope(sub_sizes, list(per_draw[inside, r])) for r in range(per_draw.shape[1])
        ]
        low_d, high_d = _interval(np.array(domain_betas, dtype=float))
        used = [n for n, k in zip(sizes, ks_point, strict=True) if math.isfinite(k) and k > 0]
        used_d = [sizes[i] for i in inside if math.isfinite(ks_point[i]) and ks_point[i] > 0]
        beta = fitted_slope(sizes, ks_point)
        beta_d = fitted_slope(sub_sizes, [ks_point[i] for i in inside])
        exponent_rows.append(
            {
                "measure": measure,
                "reading": reading,
                "eps": float(eps),
                "beta": beta,
                "low": low,
                "high": high,
                "sizes_reached": len(used),
                "law": law_verdict(
                    low, high, [premise_of[(measure, n)] for n in used], estimate=beta
                ),
                "beta_domain": beta_d,
                "low_domain": low_d,
                "high_domain": high_d,
                "sizes_in_domain": len(inside),
                "law_domain": law_verdict(
                    low_d, high_d, [premise_of[(measure, n)] for n in used_d], estimate=beta_d
                ),
            }
        )
    return pd.DataFrame(exponent_rows)


def _eps_forms(
    sizes: Sequence[int],
    eps_grid: Sequence[float],
    point_k: dict[tuple[str, str, float], list[float]],
    draws: dict[tuple[str, str, float], list[list[float]]],
    premise_of: dict[tuple[str, int], str],
    *,
    vocab: int,
) -> pd.DataFrame:
    """`eps_form_of_law` per reading, with the premise verdict at each size."""
    forms = []
    for reading in READINGS:
        mine_k = {(m, e): v for (m, r, e), v in point_k.items() if r == reading}
        mine_draws = {(m, e): v for (m, r, e), v in draws.items() if r == reading}
        form = eps_form_of_law(sizes, eps_grid, mine_k, mine_draws, vocab)
        forms.append(form.assign(reading=reading))
    eps_form = pd.concat(forms, ignore_index=True)
    if not eps_form.empty:
        eps_form["premise"] = [
            premise_of[(m, int(n))] for m, n in zip(eps_form["measure"], eps_form["n"], strict=True)
        ]
        eps_form = eps_form[["measure", "reading", *eps_form.columns.drop(["measure", "reading"])]]
    return eps_form


def eps_form_of_law(
    sizes: Sequence[int],
    eps_grid: Sequence[float],
    point_k: dict[tuple[str, float], list[float]],
    draws: dict[tuple[str, float], list[list[float]]],
    vocab: int,
) -> pd.DataFrame:
    """k*(small ε) / k*(large ε) per measure and size, paired within each resample (every ε
    is read from the same resampled items), for the grid's extreme pair and, where the
    domain holds two targets, its extreme pair."""
    rows = []
    for measure in ("B", "error"):
        for i, n in enumerate(sizes):
            pairs = [(min(eps_grid), max(eps_grid), False)]
            inside = [e for e in eps_grid if in_domain(n, e, vocab)]
            if len(inside) >= 2:
                pairs.append((min(inside), max(inside), True))
            for small, large, domain in pairs:
                if small == large:
                    continue
                top, bottom = point_k[(measure, small)][i], point_k[(measure, large)][i]
                top_draws = np.array(draws[(measure, small)][i], dtype=float)
                bottom_draws = np.array(draws[(measure, large)][i], dtype=float)
                # A target a resample never reaches (k* = inf) has no ratio, not 0 or inf.
                usable = np.isfinite(top_draws) & np.isfinite(bottom_draws) & (bottom_draws > 0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratios = np.where(usable, top_draws / bottom_draws, np.nan)
                low, high = _interval(ratios)
                rows.append(
                    {
                        "measure": measure,
                        "n": n,
                        "eps_small": float(small),
                        "eps_large": float(large),
                        "ratio": top / bottom
                        if math.isfinite(top) and math.isfinite(bottom) and bottom > 0
                        else math.nan,
                        "low": low,
                        "high": high,
                        "predicted": math.log(1 / small) / math.log(1 / large),
                        "in_domain": domain,
                    }
                )
    return pd.DataFrame(rows)


def budget_grid(family: str, n: int, max_points: int = 60) -> list[int]:
    """Budgets for B(k): 0 to the full trace that settles the answer (3n; 3·ceil(n/ceil(√n))
    for a family that reasons by blocks) and a little past it, every s-th one where that is
    more than `max_points`, plus 3n − 1 and 3n.

    An over-thinker's grid goes on through its check pass to its longest trace, with every
    budget of the pass's first steps: that is where a cap cuts it, and where its forced answer
    is least sure.
    """
    info = get_lab_family(family)
    full = info.trace_tokens(n)
    end = info.max_trace(n) if info.overthinks else full + 2
    stride = max(1, math.ceil((end + 1) / max_points))
    budgets = {*range(0, end + 1, stride), full - 1, full, full + 2, end}
    if end > full + 2:
        budgets |= set(range(full, full + 7))
    return sorted(budgets)


def logloss_study(
    backend: LabBackend,
    *,
    sizes: Sequence[int],
    items: int = 120,
    eps_grid: Sequence[float] = DEFAULT_EPS,
    n_bootstrap: int = 200,
    max_points: int = 60,
    seed: int = 0,
) -> LogLossStudy:
    """Measure B(k) and the 0/1 error of `backend`'s family (see the module docstring)."""
    if not isinstance(backend, LabBackend):
        raise InputError(f"must be a LabBackend, got {type(backend).__name__}", field="backend")
    if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
        raise InputError(f"must be positive integers, got {list(sizes)!r}", field="sizes")
    if any(not 0 < e < 1 for e in eps_grid) or not eps_grid:
        raise InputError(f"targets must be in (0, 1), got {list(eps_grid)!r}", field="eps")
    trained = backend.lab.settings
    outside = [n for n in sizes if not trained.n_min <= n <= trained.n_max]
    if outside:
        raise InputError(
            f"sizes {outside} are outside the sizes the model was trained on "
            f"({trained.n_min}..{trained.n_max})",
            field="sizes",
        )
    started = time.perf_counter()
    family = backend.lab.family
    rows = []
    for n in sizes:
        candidates = answer_candidates(family, n)
        grid = budget_grid(family, n, max_points)
        count = min(items, distinct_questions(family, n))
        for item in make_lab_tasks(family, n=n, count=count, seed=seed):
            question = [{"role": "user", "content": f"{item.prompt}\n{DEFAULT_PROMPT.instruction}"}]
            trace = backend.generate(question, max_tokens=max(grid)).text
            for k in grid:
                probs = backend.next_token_probs(_transcript(item, trace, k), candidates)
                p = max(probs.raw[str(item.answer)], _FLOOR)
                best = max(probs.probs, key=lambda c: probs.probs[c])
                rows.append(
                    {
                        "family": family,
                        "item": item.id,
                        "n": n,
                        "k": k,
                        "p_correct": p,
                        "loss": -math.log(p),
                        "wrong": float(best != str(item.answer)),
                    }
                )
    answers = pd.DataFrame(rows)
    grid_eps = tuple(sorted({float(e) for e in eps_grid}, reverse=True))
    vocab = backend.tokenizer.vocab_size
    tables = logloss_curve_rows(answers, grid_eps, n_bootstrap, seed, vocab)
    budgets = tables.budgets
    budgets["in_domain"] = [
        in_domain(int(n), float(e), vocab)
        for n, e in zip(budgets["n"], budgets["eps"], strict=True)
    ]
    return LogLossStudy(
        family=family,
        model=backend.model,
        vocab=vocab,
        eps_grid=grid_eps,
        answers=answers,
        curve=tables.curve,
        budgets=budgets,
        exponents=tables.exponents,
        eps_form=tables.eps_form,
        premise=tables.premise,
        seconds=time.perf_counter() - started,
    )
