"""The paper's experiments and the exact Bayesian references they are read against.

Building blocks: exchangeable binary sequences (`balanced_sequences`, `beta_bernoulli_sequences`,
...), one predictor interface (`Predictor`: P(next = 1 | prefix)) with exact references
(`BetaBernoulli`, `laplace`, `kt`, `ClippedMLE`, `Oracle`; `fit_beta_prior`, the Beta prior
whose predictive best matches a model's averaged predictions), planted-effect predictors
(`PositionalBias`, `Recency`) and a model backend (`BackendPredictor`).

Experiments, each returning a result (`ExperimentResult`: `to_frame()`, `tables()`,
`versus_paper()` and `save(folder)`):
`martingale_gap`, `falck_tests`, `order_variance`, `positional_debias`, `entropy_efficiency`;
and `reproduction_report`, which runs them all (`cotplan.research.reproduction` adds the lab's
rows). Their charts live above them, in `cotplan.charts`: `chart(result)`, and `save(result,
folder)` for the tables with the PNG. Every verdict's words come from
`cotplan.research.experiments.verdicts` (`VERDICTS`, `MEANINGS`, `value_verdict`, `tally`).

The names are imported on first use, so that a command or a result's module that needs one
experiment does not import them all (with scipy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cotplan._lazy import lazy_names

if TYPE_CHECKING:
    from cotplan.intervals import Interval
    from cotplan.research.experiments._common import RunInfo
    from cotplan.research.experiments.debias import (
        PAPER_DEBIAS,
        DebiasResult,
        HarmonicFit,
        positional_debias,
    )
    from cotplan.research.experiments.entropy import (
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
    from cotplan.research.experiments.falck import FALCK_FULL, FALCK_QUICK, FalckResult, falck_tests
    from cotplan.research.experiments.martingale import (
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
    from cotplan.research.experiments.order import (
        ORDER_FULL,
        ORDER_QUICK,
        PAPER_ORDER,
        V2_ORDER_VARIANCE,
        OrderResult,
        order_variance,
    )
    from cotplan.research.experiments.predictors import (
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
    from cotplan.research.experiments.priors import BetaPriorFit, fit_beta_prior
    from cotplan.research.experiments.report import (
        EXPERIMENTS,
        PRESETS,
        ReproductionReport,
        check_params,
        planned_predictions,
        reproduction_report,
    )
    from cotplan.research.experiments.result import ExperimentResult
    from cotplan.research.experiments.sequences import (
        balanced_sequences,
        bernoulli_sequences,
        beta_bernoulli_sequences,
        random_orderings,
    )
    from cotplan.research.experiments.specs import (
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
    from cotplan.research.experiments.verdicts import (
        MEANINGS,
        MODEL_CLAIM_VERDICTS,
        VERDICTS,
        ReportRow,
        Verdict,
        tally,
        value_verdict,
    )

_PUBLIC = {  # name: the module that defines it, imported on first use
    "BackendPredictor": "cotplan.research.experiments.predictors",
    "BetaBernoulli": "cotplan.research.experiments.predictors",
    "BetaPriorFit": "cotplan.research.experiments.priors",
    "ClippedMLE": "cotplan.research.experiments.predictors",
    "DebiasResult": "cotplan.research.experiments.debias",
    "ENTROPY_FULL": "cotplan.research.experiments.entropy",
    "ENTROPY_QUICK": "cotplan.research.experiments.entropy",
    "EXPERIMENTS": "cotplan.research.experiments.report",
    "EntropyResult": "cotplan.research.experiments.entropy",
    "ExperimentResult": "cotplan.research.experiments.result",
    "FALCK_FULL": "cotplan.research.experiments.falck",
    "FALCK_QUICK": "cotplan.research.experiments.falck",
    "FalckResult": "cotplan.research.experiments.falck",
    "GapData": "cotplan.research.experiments.martingale",
    "GapFit": "cotplan.research.experiments.martingale",
    "HarmonicFit": "cotplan.research.experiments.debias",
    "Interval": "cotplan.intervals",
    "MARTINGALE_FULL": "cotplan.research.experiments.martingale",
    "MARTINGALE_QUICK": "cotplan.research.experiments.martingale",
    "MEANINGS": "cotplan.research.experiments.verdicts",
    "MODEL_CLAIM_VERDICTS": "cotplan.research.experiments.verdicts",
    "MartingaleResult": "cotplan.research.experiments.martingale",
    "ORDER_FULL": "cotplan.research.experiments.order",
    "ORDER_QUICK": "cotplan.research.experiments.order",
    "Oracle": "cotplan.research.experiments.predictors",
    "OrderResult": "cotplan.research.experiments.order",
    "PAPER_DEBIAS": "cotplan.research.experiments.debias",
    "PAPER_ENTROPY": "cotplan.research.experiments.entropy",
    "PAPER_MARTINGALE": "cotplan.research.experiments.martingale",
    "PAPER_ORDER": "cotplan.research.experiments.order",
    "PRESETS": "cotplan.research.experiments.report",
    "PROMPT_LOGPROBS_CHANGE_NOTHING": "cotplan.research.experiments.specs",
    "PositionalBias": "cotplan.research.experiments.predictors",
    "Predictor": "cotplan.research.experiments.predictors",
    "PredictorKind": "cotplan.research.experiments.specs",
    "PredictorRequest": "cotplan.research.experiments.specs",
    "Recency": "cotplan.research.experiments.predictors",
    "ReportRow": "cotplan.research.experiments.verdicts",
    "ReproductionReport": "cotplan.research.experiments.report",
    "RunInfo": "cotplan.research.experiments._common",
    "SupportsPromptLogprobs": "cotplan.research.experiments.predictors",
    "V2_ORDER_VARIANCE": "cotplan.research.experiments.order",
    "VERDICTS": "cotplan.research.experiments.verdicts",
    "Verdict": "cotplan.research.experiments.verdicts",
    "balanced_sequences": "cotplan.research.experiments.sequences",
    "bayes_limit": "cotplan.research.experiments.entropy",
    "bernoulli_sequences": "cotplan.research.experiments.sequences",
    "beta_bernoulli_sequences": "cotplan.research.experiments.sequences",
    "binary_entropy": "cotplan.research.experiments.entropy",
    "check_params": "cotplan.research.experiments.report",
    "check_prompt_logprobs": "cotplan.research.experiments.specs",
    "entropy_efficiency": "cotplan.research.experiments.entropy",
    "exact_predictor": "cotplan.research.experiments.specs",
    "expected_curve": "cotplan.research.experiments.entropy",
    "falck_tests": "cotplan.research.experiments.falck",
    "fit_beta_prior": "cotplan.research.experiments.priors",
    "kt": "cotplan.research.experiments.predictors",
    "laplace": "cotplan.research.experiments.predictors",
    "laplace_threshold_table": "cotplan.research.experiments.entropy",
    "martingale_gap": "cotplan.research.experiments.martingale",
    "open_predictor": "cotplan.research.experiments.specs",
    "order_variance": "cotplan.research.experiments.order",
    "paper_grid": "cotplan.research.experiments.martingale",
    "planned_predictions": "cotplan.research.experiments.report",
    "positional_debias": "cotplan.research.experiments.debias",
    "predictor_kinds": "cotplan.research.experiments.specs",
    "random_orderings": "cotplan.research.experiments.sequences",
    "read_gaps": "cotplan.research.experiments.martingale",
    "read_p": "cotplan.research.experiments.specs",
    "register_predictor": "cotplan.research.experiments.specs",
    "reproduction_report": "cotplan.research.experiments.report",
    "tally": "cotplan.research.experiments.verdicts",
    "value_verdict": "cotplan.research.experiments.verdicts",
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
