"""Falck, Wang & Holmes's martingale checks (ICML 2024) on sampled continuation paths.

Condition the predictor on n i.i.d. Bernoulli(θ) observations, sample K continuation paths of
length N from its own predictive (z_t = 1 iff U_t < P(1 | context, z_<t), seeded uniforms), and
compare path statistics with their distribution under exchangeability:

- T1: mean over paths of (mean of z in the first half − in the second half). A martingale
  predictive gives 0 in expectation: a drift means the predictive is not stable under its own
  samples.
- T2: within-path autocorrelation differences acf[k+1] − acf[1], k = 1..5. For exchangeable
  (conditionally i.i.d.) paths every lag has the same expected autocorrelation, so the
  differences are 0 up to the finite-length bias the bands include. (The paper notes write
  acf[k] − acf[0]; the lag-0 autocorrelation is 1 by definition, so we read index 0 as the
  first lag.)
- T3: epistemic uncertainty, the IQR across paths of each path's mean, for growing n, against
  the Bayes posterior's and the fractional posteriors' (as if n/2 or 2n observations); a
  Bayesian's shrinks like n^−1/2.

T1 and T2 bands hold for ANY exchangeable predictive, not only the Laplace reference: given the
number of ones on a path, every arrangement of the path is equally likely under exchangeability,
so the null distribution comes from rearranging each sampled path (T1: exact, the convolution
of the paths' hypergeometric counts of ones in the first half; T2: random permutations of each
path). A Bayesian with any prior, Beta(11, 11) or the model's own fitted one, passes at the
nominal rate or below. Bands are corrected for
the number of settings tested (Bonferroni), so the family-wise false alarm rate is at most 5%.
T1's null is exact, so re-seeding cannot move its band; T2 draws at least `n_null` permutations
per setting (5,000 or more; enough for about 50 beyond each corrected edge where that fits in
`T2_MAX_CELLS`). T3 compares with the Laplace reference's posterior, as Falck et al. do.

Verdicts are two-sided. A statistic outside its band is a violation ("reproduced": the claim is
that violations exist). Finding none refutes the claim only if the test could have seen one:
"not reproduced" needs every statistic's band, centred on the statistic, to lie within a stated
margin of no drift (`T1_MARGIN`, `T2_MARGIN`), so that any violation as large as the margin
would have shown; with wider bands (few paths, short paths) the row is "not testable".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import stats

from cotplan.errors import InputError
from cotplan.experiments._common import (
    RunInfo,
    finish_rows,
    run_info,
    snapshot,
)
from cotplan.experiments._stats import percentile_interval
from cotplan.experiments.predictors import (
    BetaBernoulli,
    FloatArray,
    Predictor,
    ProgressFn,
    laplace,
)
from cotplan.experiments.result import ExperimentResult
from cotplan.experiments.sequences import Bits, bernoulli_sequences
from cotplan.experiments.verdicts import (
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    ReportRow,
    Verdict,
)
from cotplan.intervals import Interval
from cotplan.intervals import compact as fmt

__all__ = [
    "FALCK_FULL",
    "FALCK_QUICK",
    "T1_MARGIN",
    "T2_MARGIN",
    "FalckResult",
    "falck_tests",
    "path_statistics",
    "t1_null",
]

FALCK_QUICK: dict[str, Any] = {
    "thetas": (0.3,),
    "ns": (20,),
    "ratios": (0.5, 1.0),
    "n_paths": 8,
    "t3_ns": (20, 50),
    "t3_length": 12,
    "n_null": 5000,
}
FALCK_FULL: dict[str, Any] = {
    "thetas": (0.3, 0.5, 0.7),
    "ns": (20, 50, 100),
    "ratios": (0.5, 2.0),
    "n_paths": 20,
    "t3_ns": (20, 50, 100, 200, 400),
    "t3_length": 50,
    "n_null": 10_000,
}

LAGS = 5
#: The smallest T1 drift that counts as a violation worth reporting: the paths' second halves
#: differ from their first by 5 points of P(1) on average.
T1_MARGIN = 0.05
#: The same for T2: a difference of 0.1 between lagged autocorrelations.
T2_MARGIN = 0.1
#: The fewest null draws a band may rest on.
MIN_NULL = 5000
#: Null draws wanted beyond each corrected band edge (T2, up to `T2_MAX_CELLS` permuted bits).
TAIL_DRAWS = 50
#: Upper bound on permuted bits per setting for T2's null (memory and time).
T2_MAX_CELLS = 10_000_000


def _acf(paths: Bits, max_lag: int) -> FloatArray:
    """Within-path autocorrelation at lags 1..max_lag, NaN for constant paths or too-short ones."""
    z = paths.astype(float)
    centred = z - z.mean(axis=-1, keepdims=True)
    denom = np.sum(centred**2, axis=-1)
    out = np.full((*z.shape[:-1], max_lag), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        for lag in range(1, max_lag + 1):
            if lag < z.shape[-1]:
                num = np.sum(centred[..., :-lag] * centred[..., lag:], axis=-1)
                out[..., lag - 1] = np.where(denom > 0, num / denom, np.nan)
    return out


def path_statistics(paths: Bits) -> tuple[FloatArray, FloatArray]:
    """T1 and T2 (k = 1..5) over the last two axes (paths, steps); leading axes are kept."""
    z = paths.astype(float)
    half = z.shape[-1] // 2
    t1 = (z[..., :half].mean(axis=-1) - z[..., half:].mean(axis=-1)).mean(axis=-1)
    acf = _acf(paths, LAGS + 1)
    with np.errstate(invalid="ignore"):
        diffs = acf[..., 1:] - acf[..., :1]
        valid = np.isfinite(diffs)
        t2 = np.where(valid, diffs, 0.0).sum(axis=-2) / np.maximum(valid.sum(axis=-2), 1)
    t2 = np.where(valid.sum(axis=-2) > 0, t2, np.nan)
    return np.asarray(t1, dtype=float), np.asarray(t2, dtype=float)


def _iqr(values: FloatArray) -> FloatArray:
    q75, q25 = np.percentile(values, [75, 25], axis=-1)
    return np.asarray(q75 - q25, dtype=float)


@dataclass(frozen=True)
class FalckResult(ExperimentResult):
    """T1/T2 per setting with Bayes bands, and T3 spread of path means versus n.

    `t1t2` has one row per (θ, n, N): T1 with its band and whether it falls outside, and
    T2_k with theirs. `t3` has one row per n: the predictor's IQR of path means, the Bayes
    band, and the fractional posteriors' IQRs. `t3_slope` is the fitted log-log slope of the
    predictor's IQR against n (Bayes: about −0.5).
    """

    chart_file: ClassVar[str] = "falck.png"

    predictor: str
    reference: str
    n_paths: int
    n_null: int
    alpha: float
    t1t2: pd.DataFrame
    t3: pd.DataFrame
    t3_slope: float
    t3_slope_ci: Interval
    t3_bayes_slope: float
    run: RunInfo

    @property
    def t1_violations(self) -> int:
        return int(self.t1t2["T1_outside"].sum())

    @property
    def t2_violations(self) -> int:
        cols = [f"T2_{k}_outside" for k in range(1, LAGS + 1)]
        return int(self.t1t2[cols].to_numpy().sum())

    def resolution(self, statistic: str) -> float:
        """The largest |statistic − band centre| + band half-width over every test of "T1" or
        "T2": within it of the band's centre, no violation could hide. NaN when nothing ran."""
        names = ["T1"] if statistic == "T1" else [f"T2_{k}" for k in range(1, LAGS + 1)]
        reach = []
        for name in names:
            if name not in self.t1t2:
                continue
            low, high = self.t1t2[f"{name}_low"], self.t1t2[f"{name}_high"]
            centre, half = (low + high) / 2, (high - low) / 2
            reach.append((self.t1t2[name] - centre).abs() + half)
        if not reach:
            return math.nan
        values = pd.concat(reach).to_numpy(dtype=float)
        # A NaN band or statistic leaves that test undecided: it counts as unresolved.
        return float(np.max(values)) if np.all(np.isfinite(values)) else math.inf

    def _violation_verdict(self, statistic: str, found: int) -> tuple[Verdict, str]:
        """A violation found: reproduced; none, with bands that would have shown one as large as
        the margin: not reproduced; none, with wider bands: not testable."""
        margin = T1_MARGIN if statistic == "T1" else T2_MARGIN
        reach = self.resolution(statistic)
        if found:
            return REPRODUCED, ""
        if reach <= margin:
            return NOT_REPRODUCED, (
                f"; none outside, and every band reaches at most {fmt(reach)} from no drift, "
                f"within the margin ±{margin:g}: a violation that large would have shown"
            )
        return NOT_TESTABLE, (
            f"; none outside, but the bands reach {fmt(reach)} from no drift, wider than the "
            f"margin ±{margin:g}: more paths (--n-paths) would narrow them"
        )

    def to_frame(self) -> pd.DataFrame:
        return self.t1t2.copy()

    def paper_rows(self) -> list[ReportRow]:
        settings = len(self.t1t2)
        t2_tests = int(self.t1t2[[f"T2_{k}" for k in range(1, LAGS + 1)]].notna().to_numpy().sum())
        slope_ok = self.t3_bayes_slope in self.t3_slope_ci
        t3_out = int(self.t3["outside"].sum()) if len(self.t3) else 0
        # A slope interval that holds both the Bayes slope and 0 cannot tell shrinking from
        # standing still: with no spread outside the band either, the preset was too small.
        flat_too = 0.0 in self.t3_slope_ci
        t3_verdict: Verdict
        no_slope = math.isnan(self.t3_slope) or math.isnan(self.t3_slope_ci.low)
        t3_note = ""
        if t3_out:
            t3_verdict = NOT_REPRODUCED
        elif no_slope:
            # No slope (fewer than two n, or none run) is no evidence either way.
            t3_verdict = NOT_TESTABLE
            t3_note = "; no slope could be fitted: T3 needs at least two context sizes (t3_ns)"
        elif not slope_ok:
            t3_verdict = NOT_REPRODUCED
        elif flat_too:
            t3_verdict = NOT_TESTABLE
            t3_note = (
                "; the interval also holds 0 (no shrinking), so it cannot tell: more paths per "
                "n (--n-paths) or more and longer contexts (the full preset) would"
            )
        else:
            t3_verdict = REPRODUCED
        band = (
            "bands valid for any exchangeable predictive (each path rearranged given its count "
            f"of ones), family-wise α = {self.alpha:g} (Bonferroni)"
        )
        t2_draws = int(self.t1t2["T2_null_draws"].min()) if settings else 0
        t2_tail = t2_draws * self.alpha / (2 * max(1, settings * LAGS))
        coarse = (
            f"; only about {t2_tail:.0f} null draws lie beyond each corrected edge, so the "
            "T2 band edges are coarse"
            if t2_tail < 25
            else ""
        )
        t1_verdict, t1_note = self._violation_verdict("T1", self.t1_violations)
        t2_verdict, t2_note = self._violation_verdict("T2", self.t2_violations)
        rows = [
            ReportRow(
                "falck",
                "sampled paths violate the martingale property (T1, claim 1)",
                "violation",
                float(self.t1_violations),
                None,
                band,
                t1_verdict,
                f"a martingale test, structural, testable on any model: {self.t1_violations} "
                f"of {settings} settings outside the band ({self.n_paths} paths each, "
                f"exact null given each path's count of ones){t1_note}",
                measured_text=f"{self.t1_violations}/{settings} outside",
            ),
            ReportRow(
                "falck",
                "sampled paths are not exchangeable (T2 autocorrelation)",
                "violation",
                float(self.t2_violations),
                None,
                band,
                t2_verdict,
                f"{self.t2_violations} of {t2_tests} lag differences outside the band "
                f"({t2_draws:,} permutation draws per setting){coarse}{t2_note}",
                measured_text=f"{self.t2_violations}/{t2_tests} outside",
            ),
            ReportRow(
                "falck",
                "the implicit posterior shrinks like the Bayes posterior (T3, claim 3)",
                "converges",
                self.t3_slope,
                self.t3_slope_ci,
                f"Bayes ({self.reference}): IQR of path means ∝ n^{fmt(self.t3_bayes_slope)} "
                f"(about n^−0.5); bands from {self.n_null:,} simulated sets",
                t3_verdict,
                "log-log slope of the spread of path means over n = "
                # A run without T3 (t3_ns=()) has an empty table with no columns.
                + ", ".join(str(int(n)) for n in self.t3.get("n", []))
                + (
                    "; the Bayes slope lies in the interval"
                    if slope_ok
                    else "; the Bayes slope lies outside the interval"
                )
                + f"; {t3_out} of {len(self.t3)} spreads outside the Bayes band (short paths add "
                f"sampling spread that does not shrink with n, so the slope has little power)"
                f"{t3_note}",
            ),
        ]
        return finish_rows(rows, self.run)

    def tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [
            ("falck_t1t2.csv", self.t1t2),
            ("falck_t3.csv", self.t3),
            ("falck_vs_paper.csv", self.versus_paper()),
        ]


def _outside(value: float, low: float, high: float) -> bool:
    """Whether `value` lies outside [low, high], a value on an edge counting as inside.

    The statistics and their bands sit on the same lattice (path means of N bits are multiples
    of 1/N), so a value equal to an edge can differ from it in the last bits of a float; such a
    value is on the edge, not beyond it."""
    tol = 1e-9 * max(1.0, abs(low), abs(high))
    return bool(value < low - tol or value > high + tol)


def _band(null: FloatArray, level: float) -> tuple[float, float]:
    finite = null[np.isfinite(null)]
    if finite.size == 0:
        return math.nan, math.nan
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def falck_tests(
    predictor: Predictor,
    thetas: Sequence[float] = (0.3, 0.5, 0.7),
    ns: Sequence[int] = (20, 50, 100),
    ratios: Sequence[float] = (0.5, 2.0),
    n_paths: int = 20,
    seed: int = 0,
    *,
    t3_ns: Sequence[int] = (20, 50, 100, 200, 400),
    t3_theta: float = 0.3,
    t3_length: int = 50,
    n_null: int = 5000,
    reference: Predictor | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    progress: ProgressFn | None = None,
) -> FalckResult:
    """Run T1 and T2 for every (θ, n, N = ratio·n), and T3 over `t3_ns`.

    The reference (Laplace by default) must be cheap: it is sampled `n_null` times per setting.
    """
    if n_paths < 4:
        raise InputError(f"must be >= 4, got {n_paths}", field="n_paths")
    if n_null < MIN_NULL:
        raise InputError(
            f"must be >= {MIN_NULL} (a corrected 5% band needs draws in its tails), got {n_null}",
            field="n_null",
        )
    if not 0 < alpha < 1:
        raise InputError(f"must lie in (0, 1), got {alpha!r}", field="alpha")
    if any(not 0 < t < 1 for t in thetas) or not 0 < t3_theta < 1:
        raise InputError("must lie in (0, 1)", field="thetas")
    if any(int(n) < 1 for n in (*ns, *t3_ns)):
        raise InputError("must be positive", field="ns")
    if t3_length < 2:
        raise InputError(f"must be >= 2, got {t3_length}", field="t3_length")
    ref = reference or laplace()
    settings = [
        (float(t), int(n), max(4, round(r * n)), float(r))
        for t in thetas
        for n in ns
        for r in ratios
    ]
    if not settings and not t3_ns:
        raise InputError("nothing to run", field="ns")
    root = np.random.SeedSequence(seed)
    streams = root.spawn(len(settings) + len(t3_ns))
    m_t1 = max(1, len(settings))
    m_t2 = max(1, len(settings) * LAGS)
    draws_t2_wanted = max(n_null, math.ceil(TAIL_DRAWS * 2 * m_t2 / alpha))
    before = snapshot(predictor)
    rows = []
    for (theta, n, length, ratio), stream in zip(settings, streams[: len(settings)], strict=True):
        rng = np.random.default_rng(stream)
        context = bernoulli_sequences(theta, n, 1, rng)[0].tolist()
        paths = predictor.sample_paths(context, rng.random((n_paths, length)), progress=progress)
        t1, t2 = path_statistics(paths)
        support, probs = t1_null(paths)
        draws_t2 = min(draws_t2_wanted, max(n_null, T2_MAX_CELLS // (n_paths * length)))
        null_t2 = _t2_null(paths, draws_t2, rng)
        row: dict[str, Any] = {
            "theta": theta,
            "n": n,
            "N": length,
            "ratio": ratio,
            "context_ones": int(sum(context)),
            "T1": float(t1),
        }
        low, high = _exact_band(support, probs, alpha / m_t1 / 2)
        row["T1_low"], row["T1_high"] = low, high
        row["T1_p"] = _exact_p(support, probs, float(t1))
        row["T1_outside"] = bool(row["T1_p"] <= alpha / m_t1)
        row["T2_null_draws"] = draws_t2
        for k in range(LAGS):
            value = float(t2[k])
            low, high = _band(null_t2[:, k], 1 - alpha / m_t2)
            row[f"T2_{k + 1}"] = value
            row[f"T2_{k + 1}_low"] = low
            row[f"T2_{k + 1}_high"] = high
            row[f"T2_{k + 1}_outside"] = bool(math.isfinite(value) and _outside(value, low, high))
        rows.append(row)
    t3_rows = []
    model_means = []
    for n, stream in zip(t3_ns, streams[len(settings) :], strict=True):
        rng = np.random.default_rng(stream)
        context = bernoulli_sequences(t3_theta, int(n), 1, rng)[0].tolist()
        paths = predictor.sample_paths(context, rng.random((n_paths, t3_length)), progress=progress)
        means = paths.mean(axis=1)
        model_means.append(means)
        null = ref.sample_paths(context, rng.random((n_null * n_paths, t3_length)))
        null_iqr = _iqr(null.reshape(n_null, n_paths, t3_length).mean(axis=2))
        ones = float(sum(context))
        row = {
            "n": int(n),
            "context_ones": int(ones),
            "iqr": float(_iqr(means)),
            "bayes_iqr": float(np.mean(null_iqr)),
        }
        row["bayes_low"], row["bayes_high"] = _band(null_iqr, 1 - alpha / max(1, len(t3_ns)))
        row["outside"] = _outside(row["iqr"], row["bayes_low"], row["bayes_high"])
        for label, scale in (("half_n", 0.5), ("double_n", 2.0)):
            a, b = _prior(ref)
            frac = BetaBernoulli(a + scale * ones, b + scale * (n - ones))
            sims = frac.sample_paths([], rng.random((n_null * n_paths, t3_length)))
            row[f"iqr_{label}"] = float(
                np.mean(_iqr(sims.reshape(n_null, n_paths, t3_length).mean(axis=2)))
            )
        t3_rows.append(row)
    info = run_info(predictor, before)
    t3 = pd.DataFrame(t3_rows)
    slope, slope_ci, bayes_slope = math.nan, Interval(math.nan, math.nan), math.nan
    if len(t3_ns) >= 2:
        x = np.log(np.asarray(t3_ns, dtype=float))
        slope = _loglog(x, t3["iqr"].to_numpy())
        bayes_slope = _loglog(x, t3["bayes_iqr"].to_numpy())
        rng = np.random.default_rng(np.random.SeedSequence([seed, 6]))
        boot = []
        for _ in range(n_boot):
            iqrs = [float(_iqr(m[rng.integers(0, m.size, m.size)])) for m in model_means]
            boot.append(_loglog(x, np.asarray(iqrs)))
        slope_ci = percentile_interval(np.asarray(boot))
    return FalckResult(
        predictor=predictor.name,
        reference=ref.name,
        n_paths=n_paths,
        n_null=n_null,
        alpha=alpha,
        t1t2=pd.DataFrame(rows),
        t3=t3,
        t3_slope=slope,
        t3_slope_ci=slope_ci,
        t3_bayes_slope=bayes_slope,
        run=info,
    )


def t1_null(paths: Bits) -> tuple[FloatArray, FloatArray]:
    """The exact null distribution of T1 under exchangeability, given each path's count of ones.

    With s ones on a path of length N, the ones in its first half (h bits) are hypergeometric,
    and T1 = (1/h + 1/(N − h))·mean(a) − mean(s)/(N − h) is affine in the total a over paths, whose
    distribution is the convolution of the paths' hypergeometric laws. Returns the support of T1
    (increasing) and its probabilities: no simulation, so nothing moves when the seed does.
    """
    k, length = paths.shape
    half = length // 2
    ones = paths.sum(axis=1).astype(np.int64)
    pmf = np.ones(1)
    for s in ones:
        a = np.arange(0, min(s, half) + 1)
        pmf = np.convolve(pmf, stats.hypergeom.pmf(a, length, s, half))
    total = np.arange(pmf.size, dtype=float)
    values = ((1 / half + 1 / (length - half)) * total - ones.sum() / (length - half)) / k
    keep = pmf > 0
    return np.asarray(values[keep], dtype=float), np.asarray(pmf[keep] / pmf[keep].sum())


def _exact_band(values: FloatArray, pmf: FloatArray, tail: float) -> tuple[float, float]:
    """The narrowest band with at most `tail` probability beyond each edge (discrete, exact)."""
    below = np.cumsum(pmf)  # P(T <= v)
    above = np.cumsum(pmf[::-1])[::-1]  # P(T >= v)
    inside = (below > tail) & (above > tail)
    if not inside.any():
        return math.nan, math.nan
    return float(values[inside][0]), float(values[inside][-1])


def _exact_p(values: FloatArray, pmf: FloatArray, value: float) -> float:
    """Two-sided p-value of `value` under the exact null."""
    tol = 1e-12
    lower = float(pmf[values <= value + tol].sum())
    upper = float(pmf[values >= value - tol].sum())
    return min(1.0, 2 * min(lower, upper))


def _t2_null(paths: Bits, draws: int, rng: np.random.Generator) -> FloatArray:
    """T2 under exchangeability: each path's bits in a uniformly random order, `draws` times."""
    k, length = paths.shape
    chunk = max(1, 2_000_000 // max(1, k * length))
    out = []
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        order = np.argsort(rng.random((size, k, length)), axis=-1)
        shuffled = np.take_along_axis(np.broadcast_to(paths, (size, k, length)), order, axis=-1)
        out.append(path_statistics(shuffled)[1])
    return np.concatenate(out, axis=0)


def _prior(ref: Predictor) -> tuple[float, float]:
    if isinstance(ref, BetaBernoulli):
        return ref.a, ref.b
    return 1.0, 1.0


def _loglog(x: FloatArray, y: FloatArray) -> float:
    ok = y > 0
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(x[ok], np.log(y[ok]), 1)[0])


def _two_sided_p(null: FloatArray, value: float) -> float:
    finite = null[np.isfinite(null)]
    if finite.size == 0 or not math.isfinite(value):
        return math.nan
    upper = (1 + np.sum(finite >= value)) / (1 + finite.size)
    lower = (1 + np.sum(finite <= value)) / (1 + finite.size)
    return float(min(1.0, 2 * min(upper, lower)))
