"""The numbers behind positional debiasing: the trend, the period, the harmonic fit, the tests.

`fit_harmonics` runs steps 1-4 of `cotplan.research.experiments.debias` on one set of gaps and
returns `DebiasStats`; `permutation_p` is the block permutation test of the periodogram peak;
`bootstrap_stats` reruns the whole fit on resampled sequences. `cotplan.research.experiments.debias`
turns them into a `DebiasResult` and reads it against the paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from cotplan.errors import InputError
from cotplan.research.experiments._stats import (
    LinearFit,
    bootstrap_counts,
    kernel_smooth,
    loo_bandwidth,
    wls,
)
from cotplan.research.experiments.martingale import GapData
from cotplan.research.experiments.predictors import FloatArray

__all__ = [
    "TREND_TERMS",
    "DebiasStats",
    "HarmonicFit",
    "bootstrap_stats",
    "fit_harmonics",
    "noise_scale",
    "permutation_p",
    "trend_basis",
]


#: The smooth trend removed before looking for periods: the paper's A/n + C, plus log(n)/n
#: and 1/n² so that the exact Bayes curve (1/n + O(1/n²)) and the paper's A·log(n)/n law leave
#: no smooth residue that a periodogram or a position regression would mistake for bias.
TREND_TERMS = ("1/n", "1", "log(n)/n", "1/n^2")


def trend_basis(n: FloatArray) -> FloatArray:
    """The columns of `TREND_TERMS` at positions n."""
    return np.column_stack([1.0 / n, np.ones_like(n), np.log(n) / n, 1.0 / n**2])


@dataclass(frozen=True)
class HarmonicFit:
    """g_n = trend(n) + Σ_k amplitudes[k]·sin(2π(k+1)n/period + phases[k]).

    The trend is ``Σ trend_coef[i] · TREND_TERMS[i]``; `A` and `C` are its 1/n and constant
    coefficients (the paper's A/n + C).
    """

    trend_coef: tuple[float, ...]
    period: float
    amplitudes: tuple[float, ...]
    phases: tuple[float, ...]
    converged: bool

    @property
    def A(self) -> float:
        return self.trend_coef[0]

    @property
    def C(self) -> float:
        return self.trend_coef[1]

    def trend(self, n: FloatArray) -> FloatArray:
        return np.asarray(trend_basis(np.asarray(n, dtype=float)) @ np.asarray(self.trend_coef))

    def harmonics(self, n: FloatArray) -> FloatArray:
        out = np.zeros_like(np.asarray(n, dtype=float))
        for k, (amp, phase) in enumerate(zip(self.amplitudes, self.phases, strict=True), 1):
            out += amp * np.sin(2 * np.pi * k * n / self.period + phase)
        return out


@dataclass(frozen=True)
class DebiasStats:
    """One run of `fit_harmonics`: the fit and what it leaves, before any interval."""

    fit: HarmonicFit
    detected_period: float
    trend: FloatArray
    harmonics: FloatArray
    residual: FloatArray
    smoothed: FloatArray
    bandwidth: float
    variance_change: float
    explained: float
    r2_before: float
    r2_after: float
    frequencies: FloatArray
    power: FloatArray
    peak_share: float
    block: int


def noise_scale(positions: FloatArray, se: FloatArray | None) -> FloatArray:
    """The gaps' standard errors smoothed in log n (a quadratic in log n through log se), scaled
    to a geometric mean of 1; all ones without standard errors (then R² is read unweighted)."""
    if se is None:
        return np.ones_like(positions, dtype=float)
    log_n = np.log(positions)
    coef = np.polyfit(log_n, np.log(np.maximum(se, 1e-300)), min(2, positions.size - 1))
    fitted = np.polyval(coef, log_n)
    return np.asarray(np.exp(fitted - fitted.mean()), dtype=float)


def _periodogram(
    z: FloatArray, spacing: float, span: float, pad: int = 8
) -> tuple[FloatArray, FloatArray]:
    """Zero-padded periodogram over frequencies with >= 2 cycles in the window, below Nyquist."""
    n = z.size
    size = pad * n
    spectrum = np.abs(np.fft.rfft(z - z.mean(), size)) ** 2 / n
    freqs = np.fft.rfftfreq(size, d=spacing)
    keep = (freqs >= 2.0 / span) & (freqs < 0.5 / spacing * 0.999)
    return np.asarray(freqs[keep], dtype=float), np.asarray(spectrum[keep], dtype=float)


def fit_harmonics(
    positions: FloatArray, gaps: FloatArray, se: FloatArray | None, n_harmonics: int
) -> DebiasStats:
    """Detrend, find the dominant period, fit up to `n_harmonics` harmonics, measure the rest."""
    spacing = float(np.min(np.diff(positions)))
    span = float(positions[-1] - positions[0]) + spacing
    w = 1.0 / np.maximum(se, 1e-12) ** 2 if se is not None else np.ones_like(gaps)
    T = trend_basis(positions)
    base = wls(T, gaps, w)
    resid0 = gaps - base.fitted
    z = resid0 * np.sqrt(w) if se is not None else resid0
    freqs, power = _periodogram(z, spacing, span)
    if freqs.size == 0:
        raise InputError(
            f"the positions span {span:g}: too short to look for a period", field="positions"
        )
    peak = int(np.argmax(power))
    f0 = float(freqs[peak])
    peak_share = float(power[peak] / max(np.sum((z - z.mean()) ** 2), 1e-300))
    k_max = max(1, min(n_harmonics, math.floor(0.5 / spacing / f0 * 0.999)))
    fit = _harmonic_fit(positions, gaps, w, T=T, f0=f0, k_max=k_max, spacing=spacing, span=span)
    trend = fit.trend(positions)
    harmonics = fit.harmonics(positions)
    debiased = gaps - harmonics
    residual = debiased - trend
    # Correlated noise (neighbours sharing a bit) is measured after the fit, on what is left.
    block = _block_length(residual * np.sqrt(w))
    # Position R² is read in units of the gaps' noise, on a trend fitted with the same weights.
    # Read raw, the inverse-variance trend follows the late, nearly exact gaps of balanced
    # sequences and leaves a smooth residue at the few noisy early positions, which then
    # dominate an unweighted R²: exact Bayes scored up to 0.48 (benchmarks/debias_control.py).
    # The noise scale is the standard errors' smooth trend in log n, not each position's own
    # estimate, which a few near-identical gaps can make almost 0 (and its residual huge).
    scale = noise_scale(positions, se)
    v = 1.0 / scale**2
    detrended = (gaps - wls(T, gaps, v).fitted) / scale
    # "Before" is the detrended gaps with the trend fitted alone, so that harmonics fitted to
    # noise cannot bend the trend and leave their own shape behind as "position structure".
    _, r2_before = loo_bandwidth(positions, detrended, leave_out=block - 1)
    bandwidth, r2_after = loo_bandwidth(positions, residual / scale, leave_out=block - 1)
    detrended_var = float(np.var(gaps - trend))
    return DebiasStats(
        fit=fit,
        detected_period=1.0 / f0,
        trend=trend,
        harmonics=harmonics,
        residual=residual,
        smoothed=kernel_smooth(positions, residual, bandwidth),
        bandwidth=bandwidth,
        variance_change=float(np.var(debiased) / np.var(gaps) - 1.0),
        explained=1.0 - float(np.var(residual)) / detrended_var if detrended_var > 0 else math.nan,
        r2_before=r2_before,
        r2_after=r2_after,
        frequencies=freqs,
        power=power,
        peak_share=peak_share,
        block=block,
    )


def _harmonic_fit(
    positions: FloatArray,
    gaps: FloatArray,
    w: FloatArray,
    *,
    T: FloatArray,
    f0: float,
    k_max: int,
    spacing: float,
    span: float,
) -> HarmonicFit:
    """Levenberg-Marquardt from the Fourier coefficients at f0; the linear fit at the detected
    period where LM fails or wanders off."""
    n_trend = T.shape[1]
    lin = _fourier_fit(positions, gaps, w, T=T, f0=f0, k_max=k_max)
    start = [*lin.coef[:n_trend], 1.0 / f0]
    for k in range(k_max):
        a, b = lin.coef[n_trend + 2 * k], lin.coef[n_trend + 1 + 2 * k]
        start += [math.hypot(a, b), math.atan2(b, a)]
    solution = _levenberg_marquardt(positions, gaps, np.sqrt(w), T=T, k_max=k_max, start=start)
    theta = solution.x
    amps, phases = [], []
    for k in range(k_max):
        amp, phase = float(theta[n_trend + 1 + 2 * k]), float(theta[n_trend + 2 + 2 * k])
        if amp < 0:  # a negative amplitude is a positive one half a turn later
            amp, phase = -amp, phase + math.pi
        amps.append(amp)
        phases.append(math.remainder(phase, 2 * math.pi))
    period = float(theta[n_trend])
    if not (2 * spacing < period < 2 * span) or not solution.success:
        # LM wandered off (a flat or noisy spectrum): keep the detected period, linear fit.
        period = 1.0 / f0
        pairs = [(lin.coef[n_trend + 2 * k], lin.coef[n_trend + 1 + 2 * k]) for k in range(k_max)]
        amps = [math.hypot(a, b) for a, b in pairs]
        phases = [math.atan2(b, a) for a, b in pairs]
        theta = np.asarray(lin.coef[:n_trend], dtype=float)
    return HarmonicFit(
        tuple(float(c) for c in theta[:n_trend]),
        period,
        tuple(amps),
        tuple(phases),
        bool(solution.success),
    )


def _fourier_fit(
    positions: FloatArray, gaps: FloatArray, w: FloatArray, *, T: FloatArray, f0: float, k_max: int
) -> LinearFit:
    """The trend and a sine and cosine at f0 and its harmonics, by weighted least squares."""
    basis = [T]
    for k in range(1, k_max + 1):
        angle = 2 * np.pi * k * f0 * positions
        basis.append(np.column_stack([np.sin(angle), np.cos(angle)]))
    return wls(np.hstack(basis), gaps, w)


def _levenberg_marquardt(
    positions: FloatArray,
    gaps: FloatArray,
    sw: FloatArray,
    *,
    T: FloatArray,
    k_max: int,
    start: list[float],
) -> Any:
    """The trend, the period and k_max (amplitude, phase) pairs fitted together, P free."""
    n_trend = T.shape[1]

    def residuals(theta: FloatArray) -> FloatArray:
        model = T @ theta[:n_trend]
        period = theta[n_trend]
        for k in range(k_max):
            amp, phase = theta[n_trend + 1 + 2 * k], theta[n_trend + 2 + 2 * k]
            model = model + amp * np.sin(2 * np.pi * (k + 1) * positions / period + phase)
        return np.asarray((model - gaps) * sw, dtype=float)

    def jacobian(theta: FloatArray) -> FloatArray:
        J = np.empty((positions.size, theta.size))
        J[:, :n_trend] = T
        period = theta[n_trend]
        J[:, n_trend] = 0.0
        for k in range(k_max):
            amp, phase = theta[n_trend + 1 + 2 * k], theta[n_trend + 2 + 2 * k]
            angle = 2 * np.pi * (k + 1) * positions / period + phase
            J[:, n_trend] += amp * np.cos(angle) * (-2 * np.pi * (k + 1) * positions / period**2)
            J[:, n_trend + 1 + 2 * k] = np.sin(angle)
            J[:, n_trend + 2 + 2 * k] = amp * np.cos(angle)
        return np.asarray(J * sw[:, None], dtype=float)

    return least_squares(
        residuals,
        np.asarray(start, dtype=float),
        jac=jacobian,
        method="lm",
        max_nfev=100 * (len(start) + 1),
    )


def permutation_p(
    positions: FloatArray,
    gaps: FloatArray,
    se: FloatArray | None,
    *,
    n_perm: int,
    seed: int,
    block: int,
) -> float:
    """Share of block shuffles whose periodogram peak is at least as dominant as observed."""
    spacing = float(np.min(np.diff(positions)))
    span = float(positions[-1] - positions[0]) + spacing
    w = 1.0 / np.maximum(se, 1e-12) ** 2 if se is not None else np.ones_like(gaps)
    z = gaps - wls(trend_basis(positions), gaps, w).fitted
    if se is not None:
        z = z * np.sqrt(w)

    def share(values: FloatArray) -> float:
        _, power = _periodogram(values, spacing, span)
        return float(power.max() / max(np.sum((values - values.mean()) ** 2), 1e-300))

    observed = share(z)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    hits = sum(share(_block_shuffle(z, block, rng)) >= observed for _ in range(n_perm))
    return (1 + hits) / (1 + n_perm)


def _block_length(z: FloatArray) -> int:
    """The first lag whose autocorrelation is within noise (2/√N): blocks keep shorter memory.

    Neighbouring positions of the nested design share a bit (the gap at n uses x_{n-1} and
    x_n), so their noise is correlated; shuffling single positions would then call that red
    noise a period.
    """
    n = z.size
    centred = z - z.mean()
    denom = float(np.sum(centred**2)) or 1.0
    limit = 2.0 / math.sqrt(n)
    for lag in range(1, max(2, n // 8)):
        if abs(float(np.sum(centred[:-lag] * centred[lag:])) / denom) < limit:
            return lag
    return max(1, n // 8)


def _block_shuffle(z: FloatArray, block: int, rng: np.random.Generator) -> FloatArray:
    """A circular block permutation: rotate, cut into blocks of `block`, shuffle the blocks."""
    if block <= 1:
        return rng.permutation(z)
    rotated = np.roll(z, int(rng.integers(z.size)))
    pieces = [rotated[i : i + block] for i in range(0, z.size, block)]
    order = rng.permutation(len(pieces))
    return np.concatenate([pieces[i] for i in order])


def bootstrap_stats(
    data: GapData, n_harmonics: int, *, n_boot: int, seed: int, weighted: bool
) -> dict[str, FloatArray]:
    """The fit's period and measures on `n_boot` resamples of the sequences (failed fits are
    skipped, so a key may hold fewer values)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    m = data.per_sequence
    s, p = m.shape
    pos = data.positions.astype(float)
    if data.shared:
        counts = [bootstrap_counts(s, n_boot, rng)]
    else:
        counts = [bootstrap_counts(s, n_boot, rng) for _ in range(p)]
    keys = ("period", "variance_change", "explained", "r2_before", "r2_after")
    out: dict[str, list[float]] = {k: [] for k in keys}
    for b in range(n_boot):
        if data.shared:
            c = counts[0][b]
            mean = c @ m / s
            second = c @ (m * m) / s
        else:
            mean = np.array([counts[j][b] @ m[:, j] / s for j in range(p)])
            second = np.array([counts[j][b] @ m[:, j] ** 2 / s for j in range(p)])
        se = np.sqrt(np.maximum(second - mean**2, 0.0) / (s - 1)) if weighted else None
        if se is not None and not np.all(se > 0):
            se = None
        try:
            stats = fit_harmonics(pos, mean, se, n_harmonics)
        except (InputError, np.linalg.LinAlgError, ValueError):
            continue
        out["period"].append(stats.fit.period)
        out["variance_change"].append(stats.variance_change)
        out["explained"].append(stats.explained)
        out["r2_before"].append(stats.r2_before)
        out["r2_after"].append(stats.r2_after)
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}
