"""An anytime-valid test that a live error rate still meets ε, one label at a time.

Labels of production calls arrive one by one, and a team looks at the verdict after each. A
fixed-sample binomial test read after every label would raise false alarms far more often than
its nominal δ; a confidence sequence does not: its guarantee holds at every stopping time, so
peeking is allowed.

The test is a mixture martingale for a Bernoulli mean (Robbins' method of mixtures; the betting
form of Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting",
2023). For a candidate error p0, after t labels with S errors and F = t − S right answers,

    K_t(p0) = ∫_{p0}^{1} q^S (1 − q)^F dπ(q)  /  (p0^S (1 − p0)^F)

with π the prior Beta(a, b). Each q > p0 in the integral is a bet λ = (q − p0) / (p0 (1 − p0))
on "the next label is an error"; under any sequence whose error probability, given the past,
is at most p0, every such bet is a nonnegative supermartingale, and so is their mixture. By
Ville's inequality P(sup_t K_t(p0) ≥ 1/δ) ≤ δ: the alarm, K_t(ε) ≥ 1/δ at any label t, fires
with probability at most δ over the whole, unbounded, stream while the error stays at ε or
below. The lower end of the confidence sequence is the smallest p0 not rejected; its running
maximum is valid too (the intersection of a confidence sequence's sets is one).

The prior only trades power between drifts (it cannot break validity): its mean is 2ε (a
drift to twice the target is the one to catch soonest) with a = 1, a wide Beta.
`benchmarks/monitor_alarm.py` measures the false-alarm rate at ε and the labels a drift to 2ε
takes to alarm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import betainc, betaln

from cotplan.errors import InputError

__all__ = [
    "ErrorTest",
    "error_test",
    "log_evidence",
    "lower_bound",
    "prior_for",
    "simulate_alarms",
]


def prior_for(eps: float) -> tuple[float, float]:
    """The mixture's Beta(a, b): a = 1 and mean 2ε (or halfway from ε to 1 when 2ε ≥ 1)."""
    mean = min(2.0 * eps, (1.0 + eps) / 2.0)
    return 1.0, (1.0 - mean) / mean


def log_evidence(
    errors: ArrayLike, labels: ArrayLike, p0: float, prior: tuple[float, float]
) -> NDArray[np.float64]:
    """log K_t(p0) for arrays of error counts S and label counts t (see the module)."""
    s = np.asarray(errors, dtype=float)
    t = np.asarray(labels, dtype=float)
    f = t - s
    a, b = prior
    with np.errstate(divide="ignore", invalid="ignore"):
        # The upper tail of the posterior Beta(a + S, b + F) beyond p0: the bets on q > p0.
        tail = np.log(1.0 - betainc(a + s, b + f, p0))
        log_null = np.where(s > 0, s * math.log(p0) if p0 > 0 else -np.inf, 0.0) + np.where(
            f > 0, f * math.log1p(-p0) if p0 < 1 else -np.inf, 0.0
        )
        out = betaln(a + s, b + f) - betaln(a, b) + tail - log_null
    return np.asarray(out, dtype=float)


def lower_bound(errors: int, labels: int, delta: float, prior: tuple[float, float]) -> float:
    """The lower end of the 1 − δ confidence sequence after `labels` labels with `errors` wrong:
    the smallest p0 the mixture does not reject (0 when none is rejected).

    Below the observed rate S/t, K_t(p0) falls as p0 rises (the tail shrinks and the null's
    likelihood grows), so the rejected p0 form an interval from 0 and bisection finds its end.
    """
    if labels == 0 or errors == 0:
        return 0.0
    threshold = math.log(1.0 / delta)
    low, high = 0.0, errors / labels
    if log_evidence(errors, labels, high, prior) >= threshold:
        return high
    for _ in range(60):
        middle = (low + high) / 2.0
        if log_evidence(errors, labels, middle, prior) >= threshold:
            low = middle
        else:
            high = middle
    return low


@dataclass(frozen=True)
class ErrorTest:
    """The sequential test of "error ≤ ε" on labelled calls (`error_test`).

    `labels` labelled calls, `errors` of them wrong; `e_value` is K_t(ε) after the last label
    (evidence against error ≤ ε: the alarm needs 1/δ); `lower` the running maximum of the
    confidence sequence's lower end (the error is at least this, with confidence 1 − δ, at any
    time); `alarm` whether K_t(ε) ever reached 1/δ, `alarm_at` the label where it first did
    (1-based). `path` holds, per label, the running errors, K_t(ε) and the lower end.
    """

    labels: int
    errors: int
    eps: float
    delta: float
    e_value: float
    lower: float
    alarm: bool
    alarm_at: int | None
    prior: tuple[float, float]
    path: tuple[tuple[int, float, float], ...] = ()

    @property
    def verdict(self) -> str:
        """One line: the alarm, or what the labels allow so far."""
        if self.alarm:
            return (
                f"ALARM: the error exceeds ε = {self.eps:g} (at least {self.lower:.3f} with "
                f"{1 - self.delta:.0%} confidence; first shown at label {self.alarm_at} of "
                f"{self.labels}): recalibrate, or raise the cap"
            )
        rate = self.errors / self.labels if self.labels else math.nan
        return (
            f"no alarm: {self.errors} of {self.labels} labelled calls wrong ({rate:.3f}); "
            f"evidence against error ≤ {self.eps:g} is {self.e_value:.3g} (alarm at "
            f"{1 / self.delta:g})"
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per label: `label` (1-based), `errors` so far, `e_value`, `lower`."""
        rows = [
            {"label": i + 1, "errors": s, "e_value": e, "lower": low}
            for i, (s, e, low) in enumerate(self.path)
        ]
        return pd.DataFrame(rows, columns=["label", "errors", "e_value", "lower"])


def _check(eps: object, delta: object) -> tuple[float, float]:
    for name, value in (("eps", eps), ("delta", delta)):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0.0 < float(value) < 1.0
        ):
            raise InputError(f"must be a number in (0, 1), got {value!r}", field=name)
    return float(eps), float(delta)  # type: ignore[arg-type]


def error_test(outcomes: Sequence[bool], eps: float, delta: float = 0.05) -> ErrorTest:
    """Test "error ≤ `eps`" on `outcomes` (True: the labelled call was wrong), in the order the
    labels arrived, with false-alarm probability at most `delta` however often it is read."""
    eps, delta = _check(eps, delta)
    wrong = np.asarray([bool(o) for o in outcomes], dtype=bool)
    prior = prior_for(eps)
    t = np.arange(1, len(wrong) + 1)
    s = np.cumsum(wrong)
    log_k = log_evidence(s, t, eps, prior)
    threshold = math.log(1.0 / delta)
    hits = np.flatnonzero(log_k >= threshold)
    lowers = np.maximum.accumulate(
        np.array(
            [lower_bound(int(si), int(ti), delta, prior) for si, ti in zip(s, t, strict=True)]
            or [0.0]
        )
    )
    e_values = np.exp(np.minimum(log_k, 700.0))
    path = tuple(
        (int(si), float(ei), float(li)) for si, ei, li in zip(s, e_values, lowers, strict=False)
    )
    return ErrorTest(
        labels=len(wrong),
        errors=int(s[-1]) if len(s) else 0,
        eps=eps,
        delta=delta,
        e_value=float(e_values[-1]) if len(e_values) else 1.0,
        lower=float(lowers[-1]),
        alarm=bool(hits.size),
        alarm_at=int(hits[0]) + 1 if hits.size else None,
        prior=prior,
        path=path,
    )


def simulate_alarms(
    error: float, eps: float, *, delta: float = 0.05, runs: int, labels: int, seed: int
) -> NDArray[np.int64]:
    """The label at which the alarm first fires in each of `runs` simulated streams of `labels`
    labels whose true error is `error` (0 where it never fires), drawn with `seed`: how often
    the test cries wolf at ε, and how many labels a drift takes to show."""
    eps, delta = _check(eps, delta)
    if not 0.0 <= error <= 1.0:
        raise InputError(f"must be in [0, 1], got {error!r}", field="error")
    rng = np.random.default_rng(seed)
    wrong = rng.random((runs, labels)) < error
    s = np.cumsum(wrong, axis=1)
    t = np.broadcast_to(np.arange(1, labels + 1), s.shape)
    hit = log_evidence(s, t, eps, prior_for(eps)) >= math.log(1.0 / delta)
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0).astype(np.int64)
