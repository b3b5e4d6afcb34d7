"""T3 of Falck et al.'s checks over several contexts per n (`cotplan.research.experiments.falck`).

For each n, `contexts` contexts of n Bernoulli(θ) bits, `n_paths` paths after each: the spread
(IQR) of each context's path means, and their median over the contexts, as Falck et al. plot it
(the median over 9 seeds). The Bayes band is the reference's distribution of that same median
given the same contexts (`n_null` simulated sets per context), so one unusual context moves the
band with the statistic. The lowest and highest spreads across contexts show how much one
context alone could have said. bayes_icl's T3 (`falck_reference.eu_check`) is computed on the
same paths. With one context the numbers are those of cotplan's single-context T3, draw for draw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cotplan.intervals import Interval
from cotplan.research.experiments._stats import percentile_interval
from cotplan.research.experiments.falck_reference import eu_check
from cotplan.research.experiments.falck_stats import iqr, loglog, null_band, outside
from cotplan.research.experiments.predictors import BetaBernoulli, FloatArray, Predictor, ProgressFn
from cotplan.research.experiments.sequences import bernoulli_sequences

__all__ = ["t3_at", "t3_slopes"]


def t3_at(
    predictor: Predictor,
    n: int,
    *,
    theta: float,
    contexts: int,
    n_paths: int,
    length: int,
    ref: Predictor,
    rng: np.random.Generator,
    n_null: int,
    level: float,
    progress: ProgressFn | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[FloatArray]]:
    """T3 at one n: the row of `FalckResult.t3`, one row per context, and each context's path
    means (for the slope's bootstrap)."""
    drawn = bernoulli_sequences(theta, n, contexts, rng)
    means: list[FloatArray] = []
    spreads, nulls = [], []
    fractional: dict[str, list[FloatArray]] = {"half_n": [], "double_n": []}
    paths_of = []
    for context in (c.tolist() for c in drawn):
        paths = predictor.sample_paths(context, rng.random((n_paths, length)), progress=progress)
        paths_of.append(paths)
        means.append(paths.mean(axis=1))
        spreads.append(float(iqr(means[-1])))
        null = ref.sample_paths(context, rng.random((n_null * n_paths, length)))
        nulls.append(iqr(null.reshape(n_null, n_paths, length).mean(axis=2)))
        ones = float(sum(context))
        for label, scale in (("half_n", 0.5), ("double_n", 2.0)):
            a, b = _prior(ref)
            frac = BetaBernoulli(a + scale * ones, b + scale * (n - ones))
            sims = frac.sample_paths([], rng.random((n_null * n_paths, length)))
            fractional[label].append(iqr(sims.reshape(n_null, n_paths, length).mean(axis=2)))
    null_median = np.median(np.stack(nulls), axis=0)
    theirs = eu_check(paths_of, drawn[0].tolist(), rng)
    row: dict[str, Any] = {
        "n": n,
        "contexts": contexts,
        "iqr": float(np.median(spreads)),
        "iqr_context_low": min(spreads),
        "iqr_context_high": max(spreads),
        "bayes_iqr": float(np.mean(null_median)),
    }
    row["bayes_low"], row["bayes_high"] = null_band(null_median, level)
    row["outside"] = outside(row["iqr"], row["bayes_low"], row["bayes_high"])
    for label, sims_iqr in fractional.items():
        row[f"iqr_{label}"] = float(np.mean(np.median(np.stack(sims_iqr), axis=0)))
    for key in ("bayes_icl_T3", "bayes_icl_ref", "bayes_icl_ref_low", "bayes_icl_ref_high"):
        row[key] = theirs[key]
    row["bayes_icl_outside"] = theirs["bayes_icl_outside"]
    per_context = [
        {
            "n": n,
            "context": j + 1,
            "context_ones": int(drawn[j].sum()),
            "iqr": spreads[j],
            "bayes_icl_T3": theirs["per_context"][j],
            "bayes_icl_paths_kept": theirs["kept"][j],
        }
        for j in range(contexts)
    ]
    return row, per_context, means


def t3_slopes(
    t3: pd.DataFrame,
    t3_ns: Sequence[int],
    model_means: list[list[FloatArray]],
    *,
    seed: int,
    n_boot: int,
) -> tuple[float, Interval, float]:
    """The log-log slopes of the model's and the reference's spreads over n, the model's with a
    bootstrap interval over its paths within each context (NaN with fewer than two n)."""
    if len(t3_ns) < 2:
        return math.nan, Interval(math.nan, math.nan), math.nan
    x = np.log(np.asarray(t3_ns, dtype=float))
    slope = loglog(x, t3["iqr"].to_numpy())
    bayes_slope = loglog(x, t3["bayes_iqr"].to_numpy())
    rng = np.random.default_rng(np.random.SeedSequence([seed, 6]))
    # The resampled paths are drawn one context at a time, in the order of a loop over draws,
    # n and contexts; their spreads and slopes are then computed at once.
    stacked = np.stack([np.stack(per_n) for per_n in model_means])  # (n, context, path)
    size = stacked.shape[-1]
    picks = np.empty((n_boot, *stacked.shape), dtype=np.intp)
    for b in range(n_boot):
        for i in range(stacked.shape[0]):
            for j in range(stacked.shape[1]):
                picks[b, i, j] = rng.integers(0, size, size)
    resampled = np.take_along_axis(np.broadcast_to(stacked, picks.shape), picks, axis=-1)
    spreads = np.median(iqr(resampled), axis=-1)  # (draw, n)
    return slope, percentile_interval(_slopes(x, spreads)), bayes_slope


def _slopes(x: FloatArray, y: FloatArray) -> FloatArray:
    """`loglog` of each row of y against x: at once where every y is positive, else row by row."""
    out = np.empty(y.shape[0])
    positive = np.all(y > 0, axis=1)
    with np.errstate(divide="ignore"):
        log_y = np.log(np.where(positive[:, None], y, 1.0))
    dx = x - x.mean()
    out[positive] = (log_y[positive] - log_y[positive].mean(axis=1, keepdims=True)) @ dx / (dx @ dx)
    for i in np.flatnonzero(~positive):
        out[i] = loglog(x, y[i])
    return out


def _prior(ref: Predictor) -> tuple[float, float]:
    if isinstance(ref, BetaBernoulli):
        return ref.a, ref.b
    return 1.0, 1.0
