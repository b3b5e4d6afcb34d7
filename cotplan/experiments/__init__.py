"""The paper's experiments and the exact Bayesian references they are read against.

Building blocks: exchangeable binary sequences (`balanced_sequences`, `beta_bernoulli_sequences`,
...), one predictor interface (`Predictor`: P(next = 1 | prefix)) with exact references
(`BetaBernoulli`, `laplace`, `kt`, `ClippedMLE`, `Oracle`; `fit_beta_prior`, the Beta prior
whose predictive best matches a model's averaged predictions), planted-effect predictors
(`PositionalBias`, `Recency`) and a model backend (`BackendPredictor`).

Experiments, each returning a result (`ExperimentResult`: `to_frame()`, `tables()`,
`versus_paper()` and `save(folder)`):
`martingale_gap`, `falck_tests`, `order_variance`, `positional_debias`, `entropy_efficiency`;
and `reproduction_report`, which runs them all (`cotplan.reproduction` adds the lab's rows).
Their charts live above them, in `cotplan.charts`: `chart(result)`, and `save(result, folder)`
for the tables with the PNG. Every verdict's words come from `cotplan.experiments.verdicts`
(`VERDICTS`, `MEANINGS`, `value_verdict`, `tally`).

The names are imported on first use, so that a command or a result's module that needs one
experiment does not import them all (with scipy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cotplan._lazy import lazy_names

if TYPE_CHECKING:
    from cotplan.experiments._common import RunInfo
    from cotplan.experiments.debias import (
        PAPER_DEBIAS,
        DebiasResult,
        HarmonicFit,
        positional_debias,
    )
    from cotplan.experiments.entropy import (
        ENTROPY_FULL,
        ENTROPY_QUICK,
        PAPER_ENTROPY,
        EntropyResult,
        bayes_limit,
        binary_entropy,
        entropy_efficiency,
        expected_curve,
        laplace_threshold_table,
    )
    from cotplan.experiments.falck import FALCK_FULL, FALCK_QUICK, FalckResult, falck_tests
    from cotplan.experiments.martingale import (
        MARTINGALE_FULL,
        MARTINGALE_QUICK,
        PAPER_MARTINGALE,
        GapData,
        GapFit,
        MartingaleResult,
        martingale_gap,
        paper_grid,
        read_gaps,
    )
    from cotplan.experiments.order import (
        ORDER_FULL,
        ORDER_QUICK,
        PAPER_ORDER,
        V2_ORDER_VARIANCE,
        OrderResult,
        order_variance,
    )
    from cotplan.experiments.predictors import (
        BackendPredictor,
        BetaBernoulli,
        ClippedMLE,
        Oracle,
        PositionalBias,
        Predictor,
        Recency,
        SupportsPromptLogprobs,
        kt,
        laplace,
    )
    from cotplan.experiments.priors import BetaPriorFit, fit_beta_prior
    from cotplan.experiments.report import (
        EXPERIMENTS,
        PRESETS,
        ReproductionReport,
        check_params,
        planned_predictions,
        reproduction_report,
    )
    from cotplan.experiments.result import ExperimentResult
    from cotplan.experiments.sequences import (
        balanced_sequences,
        bernoulli_sequences,
        beta_bernoulli_sequences,
        random_orderings,
    )
    from cotplan.experiments.specs import (
        PROMPT_LOGPROBS_CHANGE_NOTHING,
        PredictorKind,
        PredictorRequest,
        check_prompt_logprobs,
        exact_predictor,
        open_predictor,
        predictor_kinds,
        read_p,
        register_predictor,
    )
    from cotplan.experiments.verdicts import (
        MEANINGS,
        MODEL_CLAIM_VERDICTS,
        VERDICTS,
        ReportRow,
        Verdict,
        tally,
        value_verdict,
    )
    from cotplan.intervals import Interval

_PUBLIC = {  # name: the module that defines it, imported on first use
    "BackendPredictor": "cotplan.experiments.predictors",
    "BetaBernoulli": "cotplan.experiments.predictors",
    "BetaPriorFit": "cotplan.experiments.priors",
    "ClippedMLE": "cotplan.experiments.predictors",
    "DebiasResult": "cotplan.experiments.debias",
    "ENTROPY_FULL": "cotplan.experiments.entropy",
    "ENTROPY_QUICK": "cotplan.experiments.entropy",
    "EXPERIMENTS": "cotplan.experiments.report",
    "EntropyResult": "cotplan.experiments.entropy",
    "ExperimentResult": "cotplan.experiments.result",
    "FALCK_FULL": "cotplan.experiments.falck",
    "FALCK_QUICK": "cotplan.experiments.falck",
    "FalckResult": "cotplan.experiments.falck",
    "GapData": "cotplan.experiments.martingale",
    "GapFit": "cotplan.experiments.martingale",
    "HarmonicFit": "cotplan.experiments.debias",
    "Interval": "cotplan.intervals",
    "MARTINGALE_FULL": "cotplan.experiments.martingale",
    "MARTINGALE_QUICK": "cotplan.experiments.martingale",
    "MEANINGS": "cotplan.experiments.verdicts",
    "MODEL_CLAIM_VERDICTS": "cotplan.experiments.verdicts",
    "MartingaleResult": "cotplan.experiments.martingale",
    "ORDER_FULL": "cotplan.experiments.order",
    "ORDER_QUICK": "cotplan.experiments.order",
    "Oracle": "cotplan.experiments.predictors",
    "OrderResult": "cotplan.experiments.order",
    "PAPER_DEBIAS": "cotplan.experiments.debias",
    "PAPER_ENTROPY": "cotplan.experiments.entropy",
    "PAPER_MARTINGALE": "cotplan.experiments.martingale",
    "PAPER_ORDER": "cotplan.experiments.order",
    "PRESETS": "cotplan.experiments.report",
    "PROMPT_LOGPROBS_CHANGE_NOTHING": "cotplan.experiments.specs",
    "PositionalBias": "cotplan.experiments.predictors",
    "Predictor": "cotplan.experiments.predictors",
    "PredictorKind": "cotplan.experiments.specs",
    "PredictorRequest": "cotplan.experiments.specs",
    "Recency": "cotplan.experiments.predictors",
    "ReportRow": "cotplan.experiments.verdicts",
    "ReproductionReport": "cotplan.experiments.report",
    "RunInfo": "cotplan.experiments._common",
    "SupportsPromptLogprobs": "cotplan.experiments.predictors",
    "V2_ORDER_VARIANCE": "cotplan.experiments.order",
    "VERDICTS": "cotplan.experiments.verdicts",
    "Verdict": "cotplan.experiments.verdicts",
    "balanced_sequences": "cotplan.experiments.sequences",
    "bayes_limit": "cotplan.experiments.entropy",
    "bernoulli_sequences": "cotplan.experiments.sequences",
    "beta_bernoulli_sequences": "cotplan.experiments.sequences",
    "binary_entropy": "cotplan.experiments.entropy",
    "check_params": "cotplan.experiments.report",
    "check_prompt_logprobs": "cotplan.experiments.specs",
    "entropy_efficiency": "cotplan.experiments.entropy",
    "exact_predictor": "cotplan.experiments.specs",
    "expected_curve": "cotplan.experiments.entropy",
    "falck_tests": "cotplan.experiments.falck",
    "fit_beta_prior": "cotplan.experiments.priors",
    "kt": "cotplan.experiments.predictors",
    "laplace": "cotplan.experiments.predictors",
    "laplace_threshold_table": "cotplan.experiments.entropy",
    "martingale_gap": "cotplan.experiments.martingale",
    "open_predictor": "cotplan.experiments.specs",
    "order_variance": "cotplan.experiments.order",
    "paper_grid": "cotplan.experiments.martingale",
    "planned_predictions": "cotplan.experiments.report",
    "positional_debias": "cotplan.experiments.debias",
    "predictor_kinds": "cotplan.experiments.specs",
    "random_orderings": "cotplan.experiments.sequences",
    "read_gaps": "cotplan.experiments.martingale",
    "read_p": "cotplan.experiments.specs",
    "register_predictor": "cotplan.experiments.specs",
    "reproduction_report": "cotplan.experiments.report",
    "tally": "cotplan.experiments.verdicts",
    "value_verdict": "cotplan.experiments.verdicts",
}

__all__ = [
    "ENTROPY_FULL",
    "ENTROPY_QUICK",
    "EXPERIMENTS",
    "FALCK_FULL",
    "FALCK_QUICK",
    "MARTINGALE_FULL",
    "MARTINGALE_QUICK",
    "MEANINGS",
    "MODEL_CLAIM_VERDICTS",
    "ORDER_FULL",
    "ORDER_QUICK",
    "PAPER_DEBIAS",
    "PAPER_ENTROPY",
    "PAPER_MARTINGALE",
    "PAPER_ORDER",
    "PRESETS",
    "PROMPT_LOGPROBS_CHANGE_NOTHING",
    "V2_ORDER_VARIANCE",
    "VERDICTS",
    "BackendPredictor",
    "BetaBernoulli",
    "BetaPriorFit",
    "ClippedMLE",
    "DebiasResult",
    "EntropyResult",
    "ExperimentResult",
    "FalckResult",
    "GapData",
    "GapFit",
    "HarmonicFit",
    "Interval",
    "MartingaleResult",
    "Oracle",
    "OrderResult",
    "PositionalBias",
    "Predictor",
    "PredictorKind",
    "PredictorRequest",
    "Recency",
    "ReportRow",
    "ReproductionReport",
    "RunInfo",
    "SupportsPromptLogprobs",
    "Verdict",
    "balanced_sequences",
    "bayes_limit",
    "bernoulli_sequences",
    "beta_bernoulli_sequences",
    "binary_entropy",
    "check_params",
    "check_prompt_logprobs",
    "entropy_efficiency",
    "exact_predictor",
    "expected_curve",
    "falck_tests",
    "fit_beta_prior",
    "kt",
    "laplace",
    "laplace_threshold_table",
    "martingale_gap",
    "open_predictor",
    "order_variance",
    "paper_grid",
    "planned_predictions",
    "positional_debias",
    "predictor_kinds",
    "random_orderings",
    "read_gaps",
    "read_p",
    "register_predictor",
    "reproduction_report",
    "tally",
    "value_verdict",
]


__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, __all__)
