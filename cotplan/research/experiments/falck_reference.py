"""Falck et al.'s statistics as their own code defines them, beside cotplan's exact-band version.

The definitions are those of the authors' repository, https://github.com/meta-inf/bayes_icl at
commit 9e9d544ac464ade1c119c514393fa9d3c03acfe8 (its only commit, "init"), files
``plotting.py`` and ``agg_plot.py``:

- ``plotting.remove_outliers_abs(paths)``: keep the paths whose mean |z| lies within
  [q1 − 1.5·IQR, q3 + 1.5·IQR] of the paths' means (`remove_outliers_abs`). Applied to the
  model's paths before every statistic (``agg_plot.compute_ag_stats_and_bootstrap``), never to
  the reference's draws.
- ``plotting.marginal_acf(paths, Kmax=5)``: for lag i = 1..5 the uncentred products
  z[t + i]·z[t] averaged within each path, the per-path averages trimmed by the same 1.5·IQR
  rule (``remove_outliers_1d``), their mean over the kept paths divided by
  1e-5 + mean of z² over ``paths[:, i:-i]`` (all paths pooled) (`marginal_acf`).
- ``plotting.multi_acf_diff(paths, Kmax=5)``: ``macf[i] − macf[0]`` for i = 1..4: four
  differences, lags 2..5 minus lag 1 (`multi_acf_diff`). A lag with ``N <= 2·i`` leaves
  ``paths[:, i:-i]`` empty and its difference is NaN, as theirs is.
- ``agg_plot.compute_ag_stats``: T1 = mean of the first ``N//2`` steps − mean of the rest, pooled
  over paths (`first_minus_second`); T2 = ``multi_acf_diff``; the path means for T3.
- ``plotting.sample_ref_posterior_and_data("bernoulli", p, n, N, K)``: K values
  θ ~ Beta(n·p + 1, n·(1 − p) + 1), then z = U < θ as float32 (`reference_paths`).
- ``agg_plot.compute_ag_stats_and_bootstrap``: after trimming, ``BS_K`` reference draws of
  K (the paths kept) × N at the context's mean (T2's and T3's band), then ``BS_K`` at the kept
  paths' mean ("mean-matched", T1's band), in that order; ``BS_K = 600`` for T1/T2
  (``cid_std_fig``) and 500 for T3 (``plot_scaling_main``).
- ``agg_plot.mean_ag_plot``: T1's band is the 2.5% and 97.5% quantiles of the mean-matched draws'
  T1; ``ar_diff_plot``: T2's band is the 2.5 and 97.5 percentiles of the draws' first difference
  alone, used for all four ("under H0 ... identically distributed, so we use i=0"). Both draw a
  further tolerance of 0.1/n around the band (``ETOL``, "acceptable deviation from the CIs").
- ``agg_plot.plot_scaling_main``: T3 is the IQR of the kept paths' means, for n in
  (20, 50, 100, 200, 400), θ = 0.5, 9 contexts (seeds) per n, paths cut to N = n//2; the figure
  plots its median over contexts; the reference is 500 draws at the first context's mean, its
  median and 2.5%/97.5% quantiles.

What differs from cotplan's version (`cotplan.research.experiments.falck_stats`): cotplan's T2
centres each path, averages the per-path autocorrelations without trimming and takes five
differences (lags 2..6 minus lag 1); its bands come from rearranging the model's own paths (valid
for any exchangeable predictive) and are Bonferroni-corrected; cotplan's T1 keeps every path. The
bayes_icl bands are per statistic (95%, uncorrected) and come from one exact Bayesian (uniform
prior). Their code draws each figure and leaves the reading to the eye; a verdict over a grid
needs a rule, so `alarm_count` compares the number of statistics beyond band ± tolerance with the
number the reference's own draws put there (its 95th percentile over the draws): a family-wise
reading of their per-statistic thresholds, cotplan's addition.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from cotplan.intervals import compact as fmt
from cotplan.research.experiments.falck_stats import outside
from cotplan.research.experiments.predictors import FloatArray
from cotplan.research.experiments.verdicts import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, Verdict

__all__ = [
    "BS_K_EU",
    "BS_K_MP",
    "COMMIT",
    "DIFFS",
    "SOURCE",
    "AlarmCount",
    "MpCheck",
    "alarm_count",
    "eu_check",
    "first_minus_second",
    "marginal_acf",
    "mp_check",
    "multi_acf_diff",
    "printed_side_by_side",
    "reference_paths",
    "remove_outliers_abs",
    "side_by_side",
    "trim_mask",
]

SOURCE = "https://github.com/meta-inf/bayes_icl"
COMMIT = "9e9d544ac464ade1c119c514393fa9d3c03acfe8"
#: ``marginal_acf``'s Kmax: lags 1..5, so ``multi_acf_diff`` has four differences.
KMAX = 5
DIFFS = KMAX - 1
#: Reference draws per setting for T1/T2 (``cid_std_fig``) and for T3 (``plot_scaling_main``).
BS_K_MP = 600
BS_K_EU = 500
#: ``ETOL = 0.1 / n``: the tolerance drawn around each band.
TOLERANCE = 0.1

#: Paths of any numeric dtype (0/1 integers, float32 like bayes_icl's draws, float64).
Array = npt.NDArray[Any]
#: A numpy Generator, or a RandomState: seeded like bayes_icl's global state, it draws exactly
#: what their code draws.
Rng = np.random.Generator | np.random.RandomState


def trim_mask(values: Array) -> Array:
    """``remove_outliers_1d``'s mask over the last axis: within 1.5·IQR of the quartiles."""
    q1, q3 = np.quantile(values, [0.25, 0.75], axis=-1, keepdims=True)
    spread = q3 - q1
    return np.asarray((q1 - 1.5 * spread <= values) & (values <= q3 + 1.5 * spread))


def remove_outliers_abs(paths: Array) -> Array:
    """The paths (rows) whose mean |z| is not an outlier among the rows' (1.5·IQR rule)."""
    z = np.asarray(paths)
    return np.asarray(z[trim_mask(np.abs(z).mean(1))])


def marginal_acf(paths: Array, kmax: int = KMAX) -> Array:
    """bayes_icl's uncentred, trimmed ACF at lags 1..kmax over the last two axes (paths, steps);
    leading axes (reference draws) are kept. NaN where a lag leaves nothing to average."""
    z = np.asarray(paths)
    out = []
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of an empty slice is NaN
        for i in range(1, kmax + 1):
            per_path = (z[..., i:] * z[..., :-i]).mean(-1)
            keep = trim_mask(per_path)
            kept = np.where(keep, per_path, 0).sum(-1) / keep.sum(-1).astype(per_path.dtype)
            out.append(kept / (1e-5 + (z[..., i:-i] ** 2).mean((-2, -1))))
    return np.stack(out, axis=-1)


def multi_acf_diff(paths: Array, kmax: int = KMAX) -> Array:
    """T2 as bayes_icl defines it: acf[lag i + 1] − acf[lag 1], i = 1..kmax − 1."""
    acf = marginal_acf(paths, kmax)
    return np.asarray(acf[..., 1:] - acf[..., :1])


def first_minus_second(paths: Array) -> Array:
    """T1: mean of the first N//2 steps minus mean of the rest, pooled over the paths."""
    z = np.asarray(paths)
    half = z.shape[-1] // 2
    return np.asarray(z[..., :half].mean((-2, -1)) - z[..., half:].mean((-2, -1)))


def reference_paths(p: float, n: int, length: int, k: int, *, draws: int, rng: Rng) -> Array:
    """`draws` sets of k paths from the uniform-prior posterior given n observations of mean p,
    drawn in bayes_icl's order (K θ's, then K × N uniforms, per draw), as float32 like theirs."""
    a, b = n * p + 1, n * (1 - p) + 1
    out = np.empty((draws, k, length), dtype=np.float32)
    for d in range(draws):
        theta = rng.beta(a, b, size=(k,))
        out[d] = rng.uniform(size=(k, length)) < theta[:, None]
    return out


@dataclass(frozen=True)
class MpCheck:
    """T1 and T2 of one setting as bayes_icl computes them, with their reference draws."""

    kept: int
    t1: float
    t1_band: tuple[float, float]
    t2: Array
    t2_band: tuple[float, float]
    tolerance: float
    null_t1: Array
    null_t2: Array

    def t1_alarm(self) -> bool:
        return _beyond(self.t1, self.t1_band, self.tolerance)

    def t2_alarms(self) -> list[bool]:
        return [_beyond(float(v), self.t2_band, self.tolerance) for v in self.t2]

    def null_alarms(self) -> tuple[FloatArray, FloatArray]:
        """Per reference draw: whether its T1 lies beyond the band ± tolerance, and how many of
        its four T2 differences do (the reference's own false alarms)."""
        low, high = self.t1_band[0] - self.tolerance, self.t1_band[1] + self.tolerance
        t1 = (self.null_t1 < low) | (self.null_t1 > high)
        low, high = self.t2_band[0] - self.tolerance, self.t2_band[1] + self.tolerance
        with np.errstate(invalid="ignore"):
            t2 = ((self.null_t2 < low) | (self.null_t2 > high)).sum(axis=1)
        return t1.astype(float), t2.astype(float)

    def columns(self) -> dict[str, Any]:
        """The setting's ``bayes_icl_*`` columns of `FalckResult.t1t2`."""
        row: dict[str, Any] = {
            "bayes_icl_paths_kept": self.kept,
            "bayes_icl_tolerance": self.tolerance,
            "bayes_icl_T1": self.t1,
            "bayes_icl_T1_low": self.t1_band[0],
            "bayes_icl_T1_high": self.t1_band[1],
            "bayes_icl_T1_outside": self.t1_alarm(),
            "bayes_icl_T2_low": self.t2_band[0],
            "bayes_icl_T2_high": self.t2_band[1],
        }
        for k, (value, alarm) in enumerate(zip(self.t2, self.t2_alarms(), strict=True), 1):
            row[f"bayes_icl_T2_{k}"] = float(value)
            row[f"bayes_icl_T2_{k}_outside"] = alarm
        return row


def _beyond(value: float, band: tuple[float, float], tolerance: float) -> bool:
    if not (math.isfinite(value) and math.isfinite(band[0]) and math.isfinite(band[1])):
        return False
    return outside(value, band[0] - tolerance, band[1] + tolerance)


def mp_check(paths: Array, context: Sequence[int], rng: Rng, draws: int = BS_K_MP) -> MpCheck:
    """T1 and T2 of one setting exactly as bayes_icl computes them (see the module docstring)."""
    kept = remove_outliers_abs(np.asarray(paths, dtype=float))
    data = np.asarray(context, dtype=float)
    n = data.size
    k, length = kept.shape
    ref = reference_paths(float(data.mean()), n, length, k, draws=draws, rng=rng)
    matched = reference_paths(float(kept.mean()), n, length, k, draws=draws, rng=rng)
    null_t1 = first_minus_second(matched)
    null_t2 = multi_acf_diff(ref)
    t1_low, t1_high = np.quantile(null_t1, [0.025, 0.975])
    t2_low, t2_high = np.percentile(null_t2[:, 0], [2.5, 97.5])
    return MpCheck(
        kept=k,
        t1=float(first_minus_second(kept)),
        t1_band=(float(t1_low), float(t1_high)),
        t2=multi_acf_diff(kept),
        t2_band=(float(t2_low), float(t2_high)),
        tolerance=TOLERANCE / n,
        null_t1=null_t1,
        null_t2=null_t2,
    )


def eu_check(
    per_context: Sequence[Array],
    first_context: Sequence[int],
    rng: Rng,
    draws: int = BS_K_EU,
) -> dict[str, Any]:
    """T3 at one n as bayes_icl computes it: the IQR of the kept paths' means per context, their
    median over contexts, and the reference's median and 95% band from the first context."""
    kept = [remove_outliers_abs(np.asarray(p, dtype=float)) for p in per_context]
    t3 = [float(_iqr(k.mean(1))) for k in kept]
    data = np.asarray(first_context, dtype=float)
    k, length = kept[0].shape
    ref = reference_paths(float(data.mean()), data.size, length, k, draws=draws, rng=rng)
    ref_iqr = _iqr(ref.mean(2))
    low, high = np.quantile(ref_iqr, [0.025, 0.975])
    median = float(np.median(t3))
    return {
        "per_context": t3,
        "kept": [int(x.shape[0]) for x in kept],
        "bayes_icl_T3": median,
        "bayes_icl_ref": float(np.median(ref_iqr)),
        "bayes_icl_ref_low": float(low),
        "bayes_icl_ref_high": float(high),
        "bayes_icl_outside": outside(median, float(low), float(high)),
    }


def _iqr(values: FloatArray) -> FloatArray:
    """``plotting.iqr`` over the last axis: 0.75 quantile − 0.25 quantile."""
    return np.asarray(
        np.quantile(values, 0.75, axis=-1) - np.quantile(values, 0.25, axis=-1), dtype=float
    )


@dataclass(frozen=True)
class AlarmCount:
    """How many statistics of a run lie beyond bayes_icl's band ± tolerance, beside how many an
    exact Bayesian (the reference's draws, one per setting, summed over the settings) puts
    there: `chance` is that count's 95th percentile, `p` the chance of reaching `alarms`.
    `reach`: the largest |statistic − band centre| + half-width with the tolerance (NaN: none)."""

    alarms: int
    tests: int
    undefined: int
    chance: float
    p: float
    reach: float

    def verdict(self, margin: float, alpha: float) -> tuple[Verdict, str]:
        """Reproduced: more alarms than an exact Bayesian raises at level `alpha`; not
        reproduced: no more than chance, and every band ± tolerance, centred on its statistic,
        within `margin` of no drift; not testable otherwise."""
        count = (
            f"{self.alarms} of {self.tests} beyond band ± 0.1/n; an exact Bayesian's draws put "
            f"up to {self.chance:.0f} there (95th percentile), p = {self.p:.3g}"
        )
        if self.undefined:
            count += f"; {self.undefined} undefined (their lag i needs N > 2i)"
        if self.tests == 0:
            return NOT_TESTABLE, f"{count}: nothing to test, longer paths would define them"
        if self.alarms and self.p <= alpha:
            return REPRODUCED, count
        if self.reach <= margin:
            return NOT_REPRODUCED, (
                f"{count}; every band reaches at most {fmt(self.reach)} from no drift, within "
                f"±{margin:g}: a violation that large would have shown"
            )
        return NOT_TESTABLE, (
            f"{count}; the bands reach {fmt(self.reach)} from no drift, wider than ±{margin:g}: "
            "more paths (--n-paths) would narrow them"
        )


def alarm_count(checks: Sequence[MpCheck], statistic: str) -> AlarmCount:
    """`AlarmCount` of "T1" or "T2" over the settings' `checks`."""
    if not checks:
        return AlarmCount(0, 0, 0, math.nan, math.nan, math.nan)
    first = statistic == "T1"
    alarms = tests = undefined = 0
    reach: list[float] = []
    null = np.zeros(min(c.null_t1.size for c in checks))
    for c in checks:
        values = [c.t1] if first else [float(v) for v in c.t2]
        band = c.t1_band if first else c.t2_band
        flags = [c.t1_alarm()] if first else c.t2_alarms()
        null += c.null_alarms()[0 if first else 1][: null.size]
        centre = (band[0] + band[1]) / 2
        half = (band[1] - band[0]) / 2 + c.tolerance
        for value, flag in zip(values, flags, strict=True):
            if not (math.isfinite(value) and math.isfinite(centre)):
                undefined += 1
                continue
            tests += 1
            alarms += int(flag)
            reach.append(abs(value - centre) + half)
    return AlarmCount(
        alarms=alarms,
        tests=tests,
        undefined=undefined,
        chance=float(np.percentile(null, 95)),
        p=float(np.mean(null >= alarms)) if alarms else 1.0,
        reach=max(reach) if reach else math.nan,
    )


def side_by_side(t1t2: pd.DataFrame, lags: int) -> pd.DataFrame:
    """One row per (setting, statistic): bayes_icl's definition beside cotplan's exact band.

    T2's k-th statistic is lag k + 1 minus lag 1 in both (bayes_icl has four, cotplan five)."""
    rows = []
    names = [("T1", "T1", "T1")]
    names += [(f"T2 lag {k + 1} − lag 1", f"T2_{k}", f"T2_{k}") for k in range(1, lags + 1)]
    for r in t1t2.to_dict("records"):
        for label, ours, theirs in names:
            key = f"bayes_icl_{theirs}"
            band = "bayes_icl_T2" if theirs.startswith("T2") else "bayes_icl_T1"
            defined = key in r  # bayes_icl has four T2 differences, cotplan five
            rows.append(
                {
                    "theta": r["theta"],
                    "n": r["n"],
                    "N": r["N"],
                    "statistic": label,
                    "bayes_icl definition": r[key] if defined else math.nan,
                    "bayes_icl low": r[f"{band}_low"] if defined else math.nan,
                    "bayes_icl high": r[f"{band}_high"] if defined else math.nan,
                    "bayes_icl tolerance": r["bayes_icl_tolerance"] if defined else math.nan,
                    "bayes_icl outside": r[f"{key}_outside"] if defined else None,
                    "cotplan exact band": r[ours],
                    "cotplan low": r[f"{ours}_low"],
                    "cotplan high": r[f"{ours}_high"],
                    "cotplan outside": r[f"{ours}_outside"],
                }
            )
    return pd.DataFrame(rows)


def printed_side_by_side(frame: pd.DataFrame) -> pd.DataFrame:
    """`side_by_side` for the terminal: each band in one column, under two labelled headers."""

    def band(low: float, high: float, tolerance: float | None = None) -> str:
        if not (math.isfinite(low) and math.isfinite(high)):
            return ""
        text = f"[{low:.3f}, {high:.3f}]"
        return text if tolerance is None else f"{text} ± {tolerance:.3f}"

    def value(v: float) -> str:
        return f"{v:.3f}" if math.isfinite(v) else "undefined"

    theirs, ours = "bayes_icl definition", "cotplan exact band"
    rows = frame.to_dict("records")
    columns = {
        ("setting", "θ"): [f"{r['theta']:g}" for r in rows],
        ("setting", "n"): [r["n"] for r in rows],
        ("setting", "N"): [r["N"] for r in rows],
        ("setting", "statistic"): [r["statistic"] for r in rows],
        # "—": not among bayes_icl's four differences; "undefined": the path is too short.
        (theirs, "value"): [
            "—" if r["bayes_icl outside"] is None else value(r[theirs]) for r in rows
        ],
        (theirs, "band ± 0.1/n"): [
            band(r["bayes_icl low"], r["bayes_icl high"], r["bayes_icl tolerance"]) for r in rows
        ],
        (theirs, "outside"): [
            "" if r["bayes_icl outside"] is None else r["bayes_icl outside"] for r in rows
        ],
        (ours, "value"): [value(r[ours]) for r in rows],
        (ours, "band"): [band(r["cotplan low"], r["cotplan high"]) for r in rows],
        (ours, "outside"): [r["cotplan outside"] for r in rows],
    }
    return pd.DataFrame(columns)
