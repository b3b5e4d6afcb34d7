"""The paper's martingale gap Δ̂n, its A·log n/n + B fit, and the exact Bayes reference beside it.

Δ̂n = mean over sequences of | log P(x_n | x_1..x_{n-1}) − log P(x_n | x_1..x_{n-2}) |: how much
the log-probability of the observed n-th bit moves when one more observation is in context.

Two designs:

- ``"nested"`` (default): `n_sequences` balanced sequences of length max(ns); the prefix of
  length n of each serves every n. One pass over all prefixes of a sequence (each request
  extending the previous one, so the server's prompt cache evaluates two new tokens per request)
  gives Δ̂ at every position, which the positional debiasing needs. Only the full-length sequence
  is exactly balanced; shorter prefixes have hypergeometric counts around n/2, and the Δ̂n of
  neighbouring n share sequences, so the bootstrap resamples whole sequences (the same draw for
  every n) to keep that correlation in the intervals.
- ``"independent"``: the paper's design, fresh balanced sequences (exactly ceil(n/2) ones) for
  each n, two requests per sequence and n.

Whatever the design, the exact Bayesian reference (Laplace by default) is scored on the same
sequences: a perfect Bayesian also moves its prediction by O(1/n) per observation, so the
model's gap is read against that reference, not against zero. The two laws are fitted in
`cotplan.research.experiments.gap_fits`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
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
from cotplan.research.experiments._stats import percentile_interval
from cotplan.research.experiments.gap_fits import GapFit, bootstrap_moments, fit_gap_laws
from cotplan.research.experiments.predictors import FloatArray, Predictor, ProgressFn, laplace
from cotplan.research.experiments.result import ExperimentResult
from cotplan.research.experiments.sequences import balanced_sequences
from cotplan.research.experiments.verdicts import (
    COTPLAN_CHECK,
    NOT_REPRODUCED,
    NOT_TESTABLE,
    REPRODUCED,
    ReportRow,
    value_verdict,
)

__all__ = [
    "MARTINGALE_FULL",
    "MARTINGALE_QUICK",
    "PAPER_MARTINGALE",
    "GapData",
    "GapFit",
    "MartingaleResult",
    "gap_matrix",
    "martingale_gap",
    "paper_grid",
    "read_gaps",
]

IntArray = npt.NDArray[np.int64]

#: The paper's reported values (v1 §5): coefficient ± error, adjusted R², the 1/n model's R².
PAPER_MARTINGALE: dict[str, Any] = {
    "A": (0.182, 0.021),
    "B": (-0.0043, 0.0018),
    "adj_r2": 0.759,
    "r2_inverse_below": 0.3,
    "api_calls": 19_000,
    "model": "GPT-3 text-davinci-002",
}


def paper_grid() -> list[int]:
    """The paper's grid: even n from 10 to 198."""
    return list(range(10, 199, 2))


#: Under a minute on 2 cores with the embedded model.
MARTINGALE_QUICK: dict[str, Any] = {"ns": list(range(10, 41, 2)), "n_sequences": 10, "n_boot": 1000}
#: The paper's grid: even n in 10..198, 100 sequences per n, 10,000 bootstrap resamples.
MARTINGALE_FULL: dict[str, Any] = {"ns": paper_grid(), "n_sequences": 100, "n_boot": 10_000}


@dataclass(frozen=True)
class GapData:
    """Per-sequence absolute gaps: ``per_sequence[i, j]`` is sequence i's |Δ| at `positions[j]`.

    `shared` is True when the same sequences serve every position (the nested design), so
    resampling must draw whole sequences for all positions at once.
    """

    positions: IntArray
    per_sequence: FloatArray
    shared: bool = True

    @property
    def gaps(self) -> FloatArray:
        return np.asarray(self.per_sequence.mean(axis=0), dtype=float)

    @property
    def standard_errors(self) -> FloatArray:
        s = self.per_sequence.shape[0]
        if s < 2:
            return np.full(self.positions.shape, np.nan)
        return np.asarray(self.per_sequence.std(axis=0, ddof=1) / math.sqrt(s), dtype=float)


def gap_matrix(probs_long: FloatArray, probs_short: FloatArray, x: FloatArray) -> FloatArray:
    """|log P(x | longer prefix) − log P(x | shorter prefix)| elementwise (P = prob of 1)."""
    p_long = np.where(x == 1, probs_long, 1.0 - probs_long)
    p_short = np.where(x == 1, probs_short, 1.0 - probs_short)
    return np.asarray(np.abs(np.log(p_long) - np.log(p_short)), dtype=float)


@dataclass(frozen=True)
class MartingaleResult(ExperimentResult):
    """Δ̂n per n for a predictor and the exact Bayes reference on the same sequences, with fits.

    `excess` is Δ̂n(predictor) − Δ̂n(reference), paired on sequences; `log_lr` is the log
    likelihood ratio of the log(n)/n model over the 1/n model (per-n variances taken as known;
    both have two parameters, so it is half the AIC difference), and `log_preferred_share` the
    share of bootstrap resamples in which log(n)/n fits better.
    """

    chart_file: ClassVar[str] = "martingale.png"

    predictor: str
    reference: str
    design: str
    ns: IntArray
    n_sequences: int
    seed: int
    n_boot: int
    gap: FloatArray
    gap_se: FloatArray
    ref_gap: FloatArray
    ref_gap_se: FloatArray
    excess: FloatArray
    excess_low: FloatArray
    excess_high: FloatArray
    fit_log: GapFit
    fit_inverse: GapFit
    ref_fit_log: GapFit
    ref_fit_inverse: GapFit
    log_lr: float
    log_preferred_share: float
    mean_excess: float
    mean_excess_ci: Interval
    data: GapData
    ref_data: GapData
    run: RunInfo

    def to_frame(self) -> pd.DataFrame:
        """One row per n: the predictor's gap, the reference's, the excess, and both fits."""
        return pd.DataFrame(
            {
                "n": self.ns,
                "gap": self.gap,
                "gap_se": self.gap_se,
                "ref_gap": self.ref_gap,
                "ref_gap_se": self.ref_gap_se,
                "excess": self.excess,
                "excess_low": self.excess_low,
                "excess_high": self.excess_high,
                "fit_log": self.fit_log.predict(self.ns.astype(float)),
                "fit_inverse": self.fit_inverse.predict(self.ns.astype(float)),
                "ref_fit_log": self.ref_fit_log.predict(self.ns.astype(float)),
            }
        )

    def fits_frame(self) -> pd.DataFrame:
        rows = []
        for who, fits in (
            (self.predictor, (self.fit_log, self.fit_inverse)),
            (self.reference, (self.ref_fit_log, self.ref_fit_inverse)),
        ):
            for fit in fits:
                rows.append({"predictor": who, **fit.as_dict()})
        return pd.DataFrame(rows)

    def per_sequence_frame(self) -> pd.DataFrame:
        """Long format: sequence, position, |Δ| for the predictor and the reference."""
        s, p = self.data.per_sequence.shape
        return pd.DataFrame(
            {
                "sequence": np.repeat(np.arange(s), p),
                "position": np.tile(self.data.positions, s),
                "gap": self.data.per_sequence.ravel(),
                "ref_gap": self.ref_data.per_sequence.ravel(),
                "shared": self.data.shared,
            }
        )

    def paper_rows(self) -> list[ReportRow]:
        a_paper, a_err = PAPER_MARTINGALE["A"]
        b_paper, b_err = PAPER_MARTINGALE["B"]
        delta_aic = 2.0 * self.log_lr
        log_wins = delta_aic >= 2.0 and self.log_preferred_share >= 0.95
        # Two-sided: 1/n must win as clearly for "not reproduced"; anything between cannot tell.
        inverse_wins = delta_aic <= -2.0 and self.log_preferred_share <= 0.05
        if log_wins:
            form_verdict, form_note = REPRODUCED, ""
        elif inverse_wins:
            form_verdict = NOT_REPRODUCED
            form_note = "; 1/n fits better by ΔAIC ≥ 2 in ≥ 95% of resamples"
        else:
            form_verdict = NOT_TESTABLE
            form_note = (
                "; neither form wins by ΔAIC ≥ 2 in ≥ 95% of resamples, so the data cannot "
                "tell them apart: more sequences (--n-sequences) or the full grid (--full) would"
            )
        ref_delta = self.ref_fit_inverse.chi2 - self.ref_fit_log.chi2
        crossing = _negative_crossing(a_paper, b_paper)
        paper_model = str(PAPER_MARTINGALE["model"])
        a_verdict = value_verdict(
            self.fit_log.A_ci,
            a_paper,
            a_err,
            predictor=self.predictor,
            paper_model=paper_model,
            n_sequences=self.n_sequences,
        )
        b_verdict = value_verdict(
            self.fit_log.B_ci,
            b_paper,
            b_err,
            predictor=self.predictor,
            paper_model=paper_model,
            n_sequences=self.n_sequences,
        )
        excess_holds = self.mean_excess_ci.low > 0
        rows = [
            ReportRow(
                "martingale",
                "Δn fits A·log n/n + B better than a 1/n model",
                "adj. R² 0.759; 1/n model R² < 0.3",
                self.fit_log.adj_r2,
                None,
                f"exact Bayes ({self.reference}) on the same sequences: adj. R² "
                f"{fmt(self.ref_fit_log.adj_r2)} vs 1/n R² {fmt(self.ref_fit_inverse.r2)}, "
                f"ΔAIC {fmt(ref_delta)}",
                form_verdict,
                f"the form of the fit, testable on any model: ΔAIC (1/n − log n/n) = "
                f"{fmt(delta_aic)}, log n/n better in {self.log_preferred_share:.0%} of "
                f"bootstrap resamples{form_note}",
                measured_text=f"adj. R² {fmt(self.fit_log.adj_r2)}; 1/n R² "
                f"{fmt(self.fit_inverse.r2)}",
            ),
            ReportRow(
                "martingale",
                "coefficient A of log n/n",
                f"{a_paper} ± {a_err}",
                self.fit_log.A,
                self.fit_log.A_ci,
                f"exact Bayes ({self.reference}): A = {fmt(self.ref_fit_log.A)} "
                f"{self.ref_fit_log.A_ci}",
                *a_verdict,
            ),
            ReportRow(
                "martingale",
                "intercept B",
                f"{b_paper} ± {b_err}",
                self.fit_log.B,
                self.fit_log.B_ci,
                "a mean |gap| cannot be negative: the paper's fit crosses 0 at n ≈ "
                f"{fmt(crossing)}, so it cannot hold far beyond its grid",
                *b_verdict,
            ),
            ReportRow(
                "martingale",
                "the gap exceeds an exact Bayesian's on the same sequences",
                "not a claim of the paper (it compares with 0)",
                self.mean_excess,
                self.mean_excess_ci,
                f"exact Bayes ({self.reference}) mean gap over the grid: "
                f"{fmt(float(np.mean(self.ref_gap)))} (not 0)",
                COTPLAN_CHECK,
                "mean over n of Δ̂n(model) − Δ̂n(Bayes), paired bootstrap over sequences; a larger "
                "update alone is not a martingale violation (a Bayesian with a weaker prior also "
                "updates more): see the Falck rows",
                holds=excess_holds,
            ),
        ]
        return finish_rows(rows, self.run)

    def tables(self) -> list[tuple[str, pd.DataFrame]]:
        """CSV tables (per n, fits, per sequence, versus paper) and a PNG chart in `folder`."""
        return [
            ("martingale.csv", self.to_frame()),
            ("martingale_fits.csv", self.fits_frame()),
            ("martingale_per_sequence.csv", self.per_sequence_frame()),
            ("martingale_vs_paper.csv", self.versus_paper()),
        ]


def _negative_crossing(a: float, b: float) -> float:
    """The n > e at which a·log(n)/n + b = 0 (b < 0 < a), found by bisection on log n/n."""
    if not (a > 0 > b):
        return float("inf")
    target = -b / a
    if target > 1 / math.e:
        return float("nan")
    lo, hi = math.e, 1e12
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if math.log(mid) / mid > target:
            lo = mid
        else:
            hi = mid
    return lo


def _check_ns(ns: Sequence[int] | None) -> IntArray:
    grid = paper_grid() if ns is None else [int(n) for n in ns]
    if len(grid) < 3:
        raise InputError(f"needs at least 3 values to fit, got {len(grid)}", field="ns")
    if min(grid) < 3:
        raise InputError(
            f"must be >= 3 (Δn needs a prefix of n-2 >= 1), got {min(grid)}", field="ns"
        )
    if len(set(grid)) != len(grid):
        raise InputError("must not repeat values", field="ns")
    return np.asarray(sorted(grid), dtype=np.int64)


def _score_nested(
    predictor: Predictor, bits: npt.NDArray[np.int8], n_min: int, progress: ProgressFn | None
) -> tuple[FloatArray, IntArray]:
    n_max = bits.shape[1]
    lengths = list(range(n_min - 2, n_max))
    q = predictor.prefix_probs(bits, lengths, progress=progress)
    positions = np.arange(n_min, n_max + 1, dtype=np.int64)
    # Column j of q is the prefix of length n_min-2+j; for position n: long = n-1, short = n-2.
    idx_long = positions - 1 - (n_min - 2)
    idx_short = positions - 2 - (n_min - 2)
    x = bits[:, positions - 1].astype(float)
    return gap_matrix(q[:, idx_long], q[:, idx_short], x), positions


def martingale_gap(
    predictor: Predictor,
    ns: Sequence[int] | None = None,
    n_sequences: int = 100,
    seed: int = 0,
    *,
    design: str = "nested",
    reference: Predictor | None = None,
    n_boot: int = 10_000,
    progress: ProgressFn | None = None,
) -> MartingaleResult:
    """Δ̂n per n for `predictor` and an exact reference on the same balanced sequences.

    Fits Δn = A·log(n)/n + B and Δn = A/n + B by weighted least squares (weights: inverse
    variance of each Δ̂n) with percentile intervals from `n_boot` resamples of the sequences.
    `progress` is called with the number of predictions completed.
    """
    grid = _check_ns(ns)
    if design not in {"nested", "independent"}:
        raise InputError(f"must be 'nested' or 'independent', got {design!r}", field="design")
    if n_sequences < 2:
        raise InputError(
            f"must be >= 2 (variances need two), got {n_sequences}", field="n_sequences"
        )
    if n_boot < 100:
        raise InputError(f"must be >= 100 for percentile intervals, got {n_boot}", field="n_boot")
    ref = reference or laplace()
    before = snapshot(predictor)
    if design == "nested":
        bits = balanced_sequences(int(grid.max()), n_sequences, seed)
        model, positions = _score_nested(predictor, bits, int(grid.min()), progress)
        exact, _ = _score_nested(ref, bits, int(grid.min()), None)
        data = GapData(positions, model, shared=True)
        ref_data = GapData(positions, exact, shared=True)
    else:
        streams = np.random.SeedSequence(seed).spawn(len(grid))
        cols, ref_cols = [], []
        for n, stream in zip(grid, streams, strict=True):
            bits = balanced_sequences(int(n), n_sequences, np.random.default_rng(stream))
            x = bits[:, n - 1].astype(float)
            q = predictor.prefix_probs(bits, [int(n) - 2, int(n) - 1], progress=progress)
            r = ref.prefix_probs(bits, [int(n) - 2, int(n) - 1])
            cols.append(gap_matrix(q[:, 1], q[:, 0], x))
            ref_cols.append(gap_matrix(r[:, 1], r[:, 0], x))
        data = GapData(grid.copy(), np.column_stack(cols), shared=False)
        ref_data = GapData(grid.copy(), np.column_stack(ref_cols), shared=False)
    info = run_info(predictor, before)
    return _analyse(
        data,
        ref_data,
        grid,
        name=predictor.name,
        ref_name=ref.name,
        design=design,
        n_sequences=n_sequences,
        seed=seed,
        n_boot=n_boot,
        info=info,
    )


def _analyse(
    data: GapData,
    ref_data: GapData,
    grid: IntArray,
    *,
    name: str,
    ref_name: str,
    design: str,
    n_sequences: int,
    seed: int,
    n_boot: int,
    info: RunInfo,
) -> MartingaleResult:
    cols = np.searchsorted(data.positions, grid)
    D = data.per_sequence[:, cols]
    R = ref_data.per_sequence[:, cols]
    E = D - R
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    (mD, vD), (mR, vR), (mE, _) = bootstrap_moments([D, R, E], n_boot, data.shared, rng)
    n = grid.astype(float)
    fits, share = fit_gap_laws(n, D, mD, vD)
    ref_fits, _ = fit_gap_laws(n, R, mR, vR)
    excess = E.mean(axis=0)
    excess_ci = np.percentile(mE, [2.5, 97.5], axis=0)
    return MartingaleResult(
        predictor=name,
        reference=ref_name,
        design=design,
        ns=grid,
        n_sequences=n_sequences,
        seed=seed,
        n_boot=n_boot,
        gap=D.mean(axis=0),
        gap_se=D.std(axis=0, ddof=1) / math.sqrt(D.shape[0]),
        ref_gap=R.mean(axis=0),
        ref_gap_se=R.std(axis=0, ddof=1) / math.sqrt(R.shape[0]),
        excess=excess,
        excess_low=excess_ci[0],
        excess_high=excess_ci[1],
        fit_log=fits[0],
        fit_inverse=fits[1],
        ref_fit_log=ref_fits[0],
        ref_fit_inverse=ref_fits[1],
        log_lr=0.5 * (fits[1].chi2 - fits[0].chi2),
        log_preferred_share=share,
        mean_excess=float(excess.mean()),
        mean_excess_ci=percentile_interval(mE.mean(axis=1)),
        data=data,
        ref_data=ref_data,
        run=info,
    )


def read_gaps(path: str | Path) -> GapData:
    """Per-sequence gaps from a saved ``martingale_per_sequence.csv`` (for `positional_debias`)."""
    file = Path(path)
    if file.is_dir():
        file = file / "martingale_per_sequence.csv"
    try:
        frame = pd.read_csv(file)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot read per-sequence gaps: {exc}", field="path", source=str(file)
        ) from exc
    needed = {"sequence", "position", "gap"}
    if not needed <= set(frame.columns):
        raise InputError(
            f"needs columns {sorted(needed)}, found {list(frame.columns)}",
            field="path",
            source=str(file),
        )
    table = frame.pivot(index="sequence", columns="position", values="gap")
    shared = bool(frame["shared"].iloc[0]) if "shared" in frame.columns else True
    return GapData(
        np.asarray(table.columns, dtype=np.int64), table.to_numpy(dtype=float), shared=shared
    )
