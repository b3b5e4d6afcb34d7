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

from cotplan._lazy import lazy_face

# The public names, each written once: imported here for type checkers and editors, and read
# from these lines by `lazy_face` to import on first use at run time.
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

__getattr__, __dir__, __all__ = lazy_face(__name__, __file__)
