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
  Bayesian's shrinks like n^−1/2. With `t3_contexts` contexts per n (Falck et al. use 9) the
  spread is the median over contexts, as in their figure, with its range across contexts
  beside it; the Bayes band is that of the median given the same contexts.

These are cotplan's versions. Falck et al.'s own code (meta-inf/bayes_icl) defines T1 and T2
differently: trimmed paths, an uncentred ACF pooled over paths, four differences, bands from one
exact Bayesian at 95% ± 0.1/n. `cotplan.research.experiments.falck_reference` computes them exactly
so, on the same paths, and the result reports both side by side (`to_frame()`); the T2 row that
answers the paper is theirs, cotplan's exact-band T2 is a "cotplan check" row.

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

from cotplan.errors import InputError
from cotplan.intervals import Interval
from cotplan.intervals import compact as fmt
from cotplan.research.experiments._common import (
    RunInfo,
    finish_rows,
    run_info,
    snapshot,
)
from cotplan.research.experiments.falck_reference import (
    BS_K_MP,
    AlarmCount,
    MpCheck,
    alarm_count,
    mp_check,
    side_by_side,
)
from cotplan.research.experiments.falck_stats import (
    LAGS,
    exact_band,
    exact_p,
    null_band,
    outside,
    path_statistics,
    t1_null,
    t2_null,
)
from cotplan.research.experiments.falck_t3 import t3_at, t3_slopes
from cotplan.research.experiments.predictors import (
    FloatArray,
    Predictor,
    ProgressFn,
    laplace,
)
from cotplan.research.experiments.result import ExperimentResult
from cotplan.research.experiments.sequences import Bits, bernoulli_sequences
from cotplan.research.experiments.verdicts import (
    COTPLAN_CHECK,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    ReportRow,
    Verdict,
)

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
    "t3_contexts": 2,
    "n_null": 5000,
}
FALCK_FULL: dict[str, Any] = {
    "thetas": (0.3, 0.5, 0.7),
    "ns": (20, 50, 100),
    "ratios": (0.5, 2.0),
    "n_paths": 20,
    "t3_ns": (20, 50, 100, 200, 400),
    "t3_length": 50,
    "t3_contexts": 4,
    "n_null": 10_000,
}

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


@dataclass(frozen=True)
class FalckResult(ExperimentResult):
    """T1/T2 per setting with Bayes bands, and T3 spread of path means versus n.

    `t1t2` has one row per (θ, n, N): T1 with its band and whether it falls outside, and
    T2_k with theirs (cotplan's exact band), then the same as bayes_icl defines them
    (``bayes_icl_*``); `to_frame()` sets the two side by side, one row per statistic. `t3` has
    one row per n: the predictor's IQR of path means (the median over `contexts` contexts, with
    the lowest and highest), the Bayes band, the fractional posteriors' IQRs and bayes_icl's T3;
    `t3_contexts` one row per (n, context). `t3_slope` is the fitted log-log slope of the
    predictor's IQR against n (Bayes: about −0.5). `bayes_icl_t1`, `bayes_icl_t2` count the
    statistics beyond bayes_icl's bands beside an exact Bayesian's count.
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
    contexts: int = 1
    t3_contexts: pd.DataFrame | None = None
    bayes_icl_t1: AlarmCount | None = None
    bayes_icl_t2: AlarmCount | None = None

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

    def _t3_contexts_note(self) -> str:
        """T3's contexts per n, their spread, and bayes_icl's T3 beside it."""
        if not len(self.t3):
            return ""
        widest = float((self.t3["iqr_context_high"] - self.t3["iqr_context_low"]).max())
        out = int(self.t3["bayes_icl_outside"].sum())
        return (
            f"; {self.contexts} context(s) per n, the spread their median (range across contexts "
            f"up to {fmt(widest)} wide); bayes_icl's T3 (trimmed paths, band from the first "
            f"context's posterior): {out} of {len(self.t3)} medians outside its 95% band"
        )

    def to_frame(self) -> pd.DataFrame:
        """T1 and each T2 difference per setting: bayes_icl's definition beside cotplan's."""
        return side_by_side(self.t1t2, LAGS)

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
        none = AlarmCount(0, 0, 0, math.nan, math.nan, math.nan)
        theirs_t1, theirs_t2 = self.bayes_icl_t1 or none, self.bayes_icl_t2 or none
        theirs_verdict, theirs_why = theirs_t2.verdict(T2_MARGIN, self.alpha)
        theirs_t1_why = theirs_t1.verdict(T1_MARGIN, self.alpha)[1]
        theirs_band = (
            f"bayes_icl's bands: 95% of {BS_K_MP} draws from the uniform-prior posterior at the "
            "context's mean, ± 0.1/n; no correction for the number of statistics"
        )
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
                f"exact null given each path's count of ones){t1_note}; as bayes_icl defines "
                f"it (trimmed paths, mean-matched band): {theirs_t1_why}",
                measured_text=f"{self.t1_violations}/{settings} outside",
            ),
            ReportRow(
                "falck",
                "sampled paths are not exchangeable (T2 as bayes_icl defines it)",
                "violation",
                float(theirs_t2.alarms),
                None,
                theirs_band,
                theirs_verdict,
                "multi_acf_diff: uncentred ACF pooled over trimmed paths, lags 2..5 − lag 1, "
                f"the band of the first difference for all four; {theirs_why}",
                measured_text=f"{theirs_t2.alarms}/{theirs_t2.tests} outside",
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
                f"{self._t3_contexts_note()}{t3_note}",
            ),
            ReportRow(
                "falck",
                "sampled paths are not exchangeable (T2, cotplan's exact band)",
                "cotplan's own check: centred per-path ACF, lags 2..6 − lag 1",
                float(self.t2_violations),
                None,
                band,
                COTPLAN_CHECK,
                f"{self.t2_violations} of {t2_tests} lag differences outside the band "
                f"({t2_draws:,} permutation draws per setting){coarse}{t2_note}"
                + ("" if t2_verdict != NOT_TESTABLE else "; undecided"),
                measured_text=f"{self.t2_violations}/{t2_tests} outside",
                holds={REPRODUCED: True, NOT_REPRODUCED: False}.get(t2_verdict),
            ),
        ]
        return finish_rows(rows, self.run)

    def tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [
            ("falck_t1t2.csv", self.t1t2),
            ("falck_side_by_side.csv", self.to_frame()),
            ("falck_t3.csv", self.t3),
            ("falck_t3_contexts.csv", _frame(self.t3_contexts)),
            ("falck_vs_paper.csv", self.versus_paper()),
        ]


def falck_tests(
    predictor: Predictor,
    thetas: Sequence[float] = (0.3, 0.5, 0.7),
    ns: Sequence[int] = (20, 50, 100),
    ratios: Sequence[float] = (0.5, 2.0),
    n_paths: int = 20,
    *,
    seed: int = 0,
    t3_ns: Sequence[int] = (20, 50, 100, 200, 400),
    t3_theta: float = 0.3,
    t3_length: int = 50,
    t3_contexts: int = 1,
    n_null: int = 5000,
    reference: Predictor | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    progress: ProgressFn | None = None,
) -> FalckResult:
    """Run T1 and T2 for every (θ, n, N = ratio·n), and T3 over `t3_ns` with `t3_contexts`
    contexts per n (the presets: 2 quick, 4 full; Falck et al. used 9).

    T1 and T2 come twice from the same paths: cotplan's exact band and bayes_icl's definition
    (`cotplan.research.experiments.falck_reference`). The reference (Laplace by default) must be
    cheap: it is sampled `n_null` times per setting and context.
    """
    _check_arguments(
        thetas=thetas,
        ns=(*ns, *t3_ns),
        n_paths=n_paths,
        t3_theta=t3_theta,
        t3_length=t3_length,
        n_null=n_null,
        alpha=alpha,
    )
    if int(t3_contexts) != t3_contexts or t3_contexts < 1:
        raise InputError(f"must be a positive integer, got {t3_contexts!r}", field="t3_contexts")
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
    theirs: list[MpCheck] = []
    for (theta, n, length, ratio), stream in zip(settings, streams[: len(settings)], strict=True):
        rng = np.random.default_rng(stream)
        context = bernoulli_sequences(theta, n, 1, rng)[0].tolist()
        paths = predictor.sample_paths(context, rng.random((n_paths, length)), progress=progress)
        draws_t2 = min(draws_t2_wanted, max(n_null, T2_MAX_CELLS // (n_paths * length)))
        row: dict[str, Any] = {
            "theta": theta,
            "n": n,
            "N": length,
            "ratio": ratio,
            "context_ones": int(sum(context)),
        }
        row.update(_t1t2_columns(paths, t2_null(paths, draws_t2, rng), alpha, m_t1, m_t2))
        theirs.append(mp_check(paths, context, rng))
        row.update(theirs[-1].columns())
        rows.append(row)
    t3_rows, context_rows = [], []
    model_means = []
    for n, stream in zip(t3_ns, streams[len(settings) :], strict=True):
        t3_row, per_context, means = t3_at(
            predictor,
            int(n),
            theta=t3_theta,
            contexts=int(t3_contexts),
            n_paths=n_paths,
            length=t3_length,
            ref=ref,
            rng=np.random.default_rng(stream),
            n_null=n_null,
            level=1 - alpha / max(1, len(t3_ns)),
            progress=progress,
        )
        t3_rows.append(t3_row)
        context_rows += per_context
        model_means.append(means)
    info = run_info(predictor, before)
    t3 = pd.DataFrame(t3_rows)
    slope, slope_ci, bayes_slope = t3_slopes(t3, t3_ns, model_means, seed=seed, n_boot=n_boot)
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
        contexts=int(t3_contexts),
        t3_contexts=pd.DataFrame(context_rows),
        bayes_icl_t1=alarm_count(theirs, "T1"),
        bayes_icl_t2=alarm_count(theirs, "T2"),
    )


def _check_arguments(
    *,
    thetas: Sequence[float],
    ns: Sequence[int],
    n_paths: int,
    t3_theta: float,
    t3_length: int,
    n_null: int,
    alpha: float,
) -> None:
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
    if any(int(n) < 1 for n in ns):
        raise InputError("must be positive", field="ns")
    if t3_length < 2:
        raise InputError(f"must be >= 2, got {t3_length}", field="t3_length")


def _t1t2_columns(
    paths: Bits, null_t2: FloatArray, alpha: float, m_t1: int, m_t2: int
) -> dict[str, Any]:
    """T1 against its exact null and T2 per lag against the permutation null, each band
    corrected for the `m_t1` (`m_t2`) tests of the run."""
    t1, t2 = path_statistics(paths)
    support, probs = t1_null(paths)
    row: dict[str, Any] = {"T1": float(t1)}
    low, high = exact_band(support, probs, alpha / m_t1 / 2)
    row["T1_low"], row["T1_high"] = low, high
    row["T1_p"] = exact_p(support, probs, float(t1))
    row["T1_outside"] = bool(row["T1_p"] <= alpha / m_t1)
    row["T2_null_draws"] = null_t2.shape[0]
    for k in range(LAGS):
        value = float(t2[k])
        low, high = null_band(null_t2[:, k], 1 - alpha / m_t2)
        row[f"T2_{k + 1}"] = value
        row[f"T2_{k + 1}_low"] = low
        row[f"T2_{k + 1}_high"] = high
        row[f"T2_{k + 1}_outside"] = bool(math.isfinite(value) and outside(value, low, high))
    return row


def _frame(frame: pd.DataFrame | None) -> pd.DataFrame:
    return pd.DataFrame() if frame is None else frame
