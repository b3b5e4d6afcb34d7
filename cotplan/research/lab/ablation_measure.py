"""The ablation's measurements: train (or load) each model, then score orderings and the gap.

`measure_variants` runs an `AblationPlan` model by model and returns its tables as
`Measurements`; `cotplan.research.lab.ablation` wraps them in a `PEAblationResult`. Every model sees
the same orderings and the same martingale sequences: the random streams depend on the seed and t
only, never on the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cotplan.research.experiments.martingale import MartingaleResult, martingale_gap
from cotplan.research.experiments.order import V2_ORDER_VARIANCE
from cotplan.research.experiments.predictors import (
    BetaBernoulli,
    FloatArray,
    Predictor,
    ProgressFn,
    laplace,
)
from cotplan.research.experiments.sequences import random_orderings
from cotplan.research.lab.ablation_setup import V2_NAMES, AblationPlan, StageFn
from cotplan.research.lab.pe_trainer import LabModel, torch_threads, train

__all__ = ["Measurements", "martingale_rows", "measure_variants", "order_rows", "reference_for"]


@dataclass(frozen=True)
class Measurements:
    """Per model, by label: the trained model, its order-variance rows and its gap result."""

    models: dict[str, LabModel]
    order: list[dict[str, Any]]
    gaps: dict[str, MartingaleResult]

    def training(self) -> pd.DataFrame:
        """One row per model: held-out loss beside the Bayes-optimal loss, size, speed."""
        return pd.DataFrame(
            [
                {
                    "model": label,
                    **m.report.summary(),
                    "d_model": m.settings.d_model,
                    "n_layers": m.settings.n_layers,
                    "seq_len": m.settings.seq_len,
                    "threads": m.report.threads,
                }
                for label, m in self.models.items()
            ]
        )

    def curves(self) -> pd.DataFrame:
        """Held-out excess over Bayes during training, every model."""
        return pd.concat(
            [m.report.to_frame().assign(model=label) for label, m in self.models.items()],
            ignore_index=True,
        )

    def gap_frame(self) -> pd.DataFrame:
        """Δ̂n per n for each model and for the Bayes reference."""
        columns = ["n", "gap", "ref_gap", "excess", "excess_low", "excess_high"]
        return pd.concat(
            [r.to_frame()[columns].assign(model=label) for label, r in self.gaps.items()],
            ignore_index=True,
        )


def measure_variants(
    plan: AblationPlan,
    *,
    seed: int,
    threads: int | None,
    retrain: bool,
    stage: StageFn | None,
    train_overrides: Mapping[str, Any],
) -> Measurements:
    """Train (or load) each of the plan's models, then run the order and martingale experiments."""

    def open_stage(name: str, total: int) -> ProgressFn | None:
        return stage(name, total) if stage is not None else None

    grid = list(plan.grid)
    models: dict[str, LabModel] = {}
    rows: list[dict[str, Any]] = []
    gaps: dict[str, MartingaleResult] = {}
    with torch_threads(threads) as n_threads:
        for variant in plan.variants:
            model = train(
                variant.pe,  # type: ignore[arg-type]
                attend_to=variant.attend_to,
                preset=plan.train_preset,
                seed=seed,
                threads=n_threads,
                retrain=retrain,
                progress=open_stage(f"train {variant.label}", plan.steps),
                **train_overrides,
            )
            models[variant.label] = model
            rows.extend(
                order_rows(
                    model,
                    variant.label,
                    ts=plan.ts,
                    n_orderings=plan.n_orderings,
                    n_boot=plan.n_boot,
                    seed=seed,
                    progress=open_stage(
                        f"orderings {variant.label}", 2 * plan.n_orderings * len(plan.ts)
                    ),
                )
            )
            gaps[variant.label] = martingale_gap(
                model,
                ns=grid,
                n_sequences=plan.n_sequences,
                seed=seed,
                reference=reference_for(model),
                n_boot=plan.n_boot,
                progress=open_stage(
                    f"martingale {variant.label}", plan.n_sequences * (max(grid) - min(grid) + 2)
                ),
            )
    return Measurements(models, rows, gaps)


def order_rows(
    model: LabModel,
    label: str,
    *,
    ts: Sequence[int],
    n_orderings: int,
    n_boot: int,
    seed: int,
    progress: ProgressFn | None,
) -> list[dict[str, Any]]:
    """Per t: the variance over random orderings of P(1 | t/2 ones), float64 and float32."""
    rows = []
    single = model.as_dtype("float32")
    a, b = model.settings.prior_a, model.settings.prior_b
    for t in ts:
        # The same orderings for every model (the stream depends on the seed and t only).
        rng = np.random.default_rng(np.random.SeedSequence([seed, 9, t]))
        orderings = [row.tolist() for row in random_orderings(t // 2, t, n_orderings, rng)]
        p64 = model.prob_one(orderings)
        p32 = single.prob_one(orderings)
        # Centre on the first ordering: an exactly constant column then stays exactly 0.
        centred = p64 - p64[0]
        boot = np.random.default_rng(np.random.SeedSequence([seed, 10, t]))
        idx = boot.integers(0, n_orderings, size=(n_boot, n_orderings))
        boot_var = centred[idx].var(axis=1, ddof=1)
        low, high = np.percentile(boot_var, [2.5, 97.5])
        bayes = (t // 2 + a) / (t + a + b)
        rows.append(
            {
                "model": label,
                "pe": model.settings.pe,
                "attend_to": model.settings.attend_to,
                "t": t,
                "ones": t // 2,
                "orderings": n_orderings,
                "variance": float(centred.var(ddof=1)),
                "variance_low": float(low),
                "variance_high": float(high),
                "variance_float32": float((p32 - p32[0]).var(ddof=1)),
                "sd": float(centred.std(ddof=1)),
                "range": float(np.ptp(p64)),
                "mean": float(p64.mean()),
                "bayes": bayes,
                "bias": float(p64.mean() - bayes),
                "v2_variance": V2_ORDER_VARIANCE[V2_NAMES[model.settings.pe]]
                if t == 20
                else math.nan,
            }
        )
        if progress is not None:
            progress(2 * n_orderings)
    return rows


def _grid_columns(result: MartingaleResult, *, reference: bool = False) -> FloatArray:
    """Per sequence, the mean over the grid of the excess gap over Bayes (or, with `reference`,
    of the exact Bayes gap itself)."""
    cols = np.searchsorted(result.data.positions, result.ns)
    bayes = result.ref_data.per_sequence[:, cols]
    values = bayes if reference else result.data.per_sequence[:, cols] - bayes
    return np.asarray(values.mean(axis=1), dtype=float)


def martingale_rows(
    results: Mapping[str, MartingaleResult], n_boot: int, seed: int
) -> pd.DataFrame:
    """Per model: the gap fits, the mean excess over Bayes, and the paired excess over the
    no-encoding model (`vs_none`) with a bootstrap interval over sequences."""
    none = results.get("none")
    rows = []
    for label, res in results.items():
        fit, inverse = res.fit_log, res.fit_inverse
        vs_none = low = high = math.nan
        if none is not None and label != "none":
            diff = _grid_columns(res) - _grid_columns(none)
            rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))
            idx = rng.integers(0, diff.size, size=(n_boot, diff.size))
            low, high = (float(x) for x in np.percentile(diff[idx].mean(axis=1), [2.5, 97.5]))
            vs_none = float(diff.mean())
        rows.append(
            {
                "model": label,
                "A": fit.A,
                "A_low": fit.A_ci.low,
                "A_high": fit.A_ci.high,
                "B": fit.B,
                "B_low": fit.B_ci.low,
                "B_high": fit.B_ci.high,
                "adj_r2": fit.adj_r2,
                "inverse_r2": inverse.r2,
                "delta_aic": 2.0 * res.log_lr,
                "mean_excess": res.mean_excess,
                "mean_excess_low": res.mean_excess_ci.low,
                "mean_excess_high": res.mean_excess_ci.high,
                "vs_none": vs_none,
                "vs_none_low": low,
                "vs_none_high": high,
                "ref_A": res.ref_fit_log.A,
                "ref_gap": float(_grid_columns(res, reference=True).mean()),
                "ref_B": res.ref_fit_log.B,
            }
        )
    return pd.DataFrame(rows)


def reference_for(model: LabModel) -> Predictor:
    """The exact Bayes predictor for the model's training prior."""
    a, b = model.settings.prior_a, model.settings.prior_b
    return laplace() if a == b == 1.0 else BetaBernoulli(a, b)
