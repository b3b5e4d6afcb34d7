"""Bayes in expectation, tested with several sequence lengths t that share one prior.

The order experiment reads claim 2 at one length (t = 20, three multisets): a Beta prior has
two parameters, so three averaged predictions leave one degree of freedom, and any prediction
affine and increasing in the count of ones k at one t is some Beta prior's predictive there
(slope 1/(a + b + t), intercept a/(a + b + t)). A predictor like 0.2 + 0.6·k/t passes it
without being Bayesian at all.

A Bayesian's prior does not change with t. Its predictive (k + a)/(t + a + b) has a slope in k
that falls as 1/(a + b + t): one prior has to fit every length at once. `bayes_in_expectation`
averages the predictor over random orderings of multisets at two lengths or more, fits one
Beta prior to all of them (`fit_beta_prior` with per-multiset lengths) and reads the verdict
two-sided from the largest gap, each multiset's gap in units of its own margin
(`bayes_margin(t)`, half an observation at that t), with an interval from resampling the
orderings and refitting:

- **reproduced** when the interval of the largest scaled gap lies wholly at or below 1;
- **not reproduced** when it lies wholly above 1 (no single prior explains the averages);
- **not testable** otherwise, or when fewer than two lengths were run (then any affine
  predictor passes, and the result says so).

`tests/test_bayes_expectation.py` checks exact references pass and a planted affine
non-Bayesian predictor fails, and that one length alone cannot tell them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cotplan.errors import InputError
from cotplan.intervals import Interval
from cotplan.research.experiments._stats import percentile_interval
from cotplan.research.experiments.order import bayes_margin
from cotplan.research.experiments.predictors import FloatArray, Predictor
from cotplan.research.experiments.priors import BetaPriorFit, fit_beta_prior
from cotplan.research.experiments.sequences import random_orderings
from cotplan.research.experiments.verdicts import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, Verdict

__all__ = ["EXPECTATION_MULTISETS", "ExpectationTest", "bayes_in_expectation"]

#: (length t, ones k): three lengths, each with a low, middle and high count of ones.
EXPECTATION_MULTISETS: tuple[tuple[int, int], ...] = (
    (10, 2),
    (10, 5),
    (10, 8),
    (20, 5),
    (20, 10),
    (20, 15),
    (40, 10),
    (40, 20),
    (40, 30),
)


@dataclass(frozen=True)
class ExpectationTest:
    """Claim 2 read with one prior shared across lengths (see the module docstring).

    `averaged` is the predictor's mean over orderings per multiset, `prior_fit` the one Beta
    prior fitted to all of them, `scaled_gap` the largest |gap| / `bayes_margin(t)` with its
    interval `scaled_gap_ci` over resampled orderings.
    """

    predictor: str
    lengths: tuple[int, ...]
    ones: tuple[int, ...]
    n_orderings: int
    averaged: FloatArray
    prior_fit: BetaPriorFit
    scaled_gap: float
    scaled_gap_ci: Interval
    verdict: Verdict
    why: str

    def to_frame(self) -> pd.DataFrame:
        """One row per multiset: t, k, the averaged prediction, the fitted prior's predictive,
        the gap and the margin at that t."""
        return pd.DataFrame(
            {
                "t": self.lengths,
                "k": self.ones,
                "averaged": self.averaged,
                "prior_predictive": self.prior_fit.predictive,
                "gap": self.prior_fit.gap,
                "margin": [bayes_margin(t) for t in self.lengths],
            }
        )


def _scaled_max_gap(fit: BetaPriorFit, margins: FloatArray) -> float:
    return float(np.max(np.abs(fit.gap) / margins))


def bayes_in_expectation(
    predictor: Predictor,
    multisets: Sequence[tuple[int, int]] = EXPECTATION_MULTISETS,
    *,
    n_orderings: int = 64,
    n_boot: int = 200,
    seed: int = 0,
) -> ExpectationTest:
    """Average `predictor` over `n_orderings` random orderings of each (t, k) multiset, fit one
    Beta prior to every average, and give the two-sided verdict (module docstring)."""
    if not multisets:
        raise InputError("needs at least one (t, k) multiset", field="multisets")
    if any(t < 1 or k < 0 or k > t for t, k in multisets):
        raise InputError(f"each (t, k) needs 0 <= k <= t, got {list(multisets)}", field="multisets")
    if n_orderings < 2:
        raise InputError(f"must be >= 2, got {n_orderings}", field="n_orderings")
    lengths = tuple(int(t) for t, _ in multisets)
    ones = tuple(int(k) for _, k in multisets)
    streams = np.random.SeedSequence([seed, 48]).spawn(len(multisets) + 1)
    preds = np.empty((len(multisets), n_orderings))
    for i, ((t, k), stream) in enumerate(zip(multisets, streams, strict=False)):
        orderings = random_orderings(k, t, n_orderings, np.random.default_rng(stream))
        preds[i] = predictor.prob_one([row.tolist() for row in orderings])
    averaged = preds.mean(axis=1)
    margins = np.array([bayes_margin(t) for t in lengths])
    fit = fit_beta_prior(ones, lengths, averaged)
    scaled = _scaled_max_gap(fit, margins)
    rng = np.random.default_rng(streams[-1])
    boot = []
    for _ in range(n_boot):
        idx = rng.integers(0, n_orderings, size=preds.shape)
        sample = np.take_along_axis(preds, idx, axis=1).mean(axis=1)
        boot.append(_scaled_max_gap(fit_beta_prior(ones, lengths, sample), margins))
    ci = percentile_interval(np.asarray(boot))
    distinct = sorted(set(lengths))
    gaps = (
        f"largest gap to one fitted prior {fit.label} {scaled:.2f} [{ci.low:.2f}, {ci.high:.2f}] "
        f"margins (half an observation at each t = {', '.join(map(str, distinct))})"
    )
    if len(distinct) < 2:
        verdict: Verdict = NOT_TESTABLE
        why = (
            "one length only: any prediction affine and increasing in the count of ones is some "
            f"Beta prior's predictive there; run two lengths or more; {gaps}"
        )
    elif ci.high <= 1.0:
        verdict, why = REPRODUCED, f"one prior explains the averages at every length; {gaps}"
    elif ci.low > 1.0:
        verdict = NOT_REPRODUCED
        why = f"no single Beta prior explains the averages across lengths; {gaps}"
    else:
        verdict = NOT_TESTABLE
        why = f"the interval crosses the margin: more orderings would narrow it; {gaps}"
    return ExpectationTest(
        predictor=predictor.name,
        lengths=lengths,
        ones=ones,
        n_orderings=n_orderings,
        averaged=averaged,
        prior_fit=fit,
        scaled_gap=scaled,
        scaled_gap_ci=ci,
        verdict=verdict,
        why=why,
    )
