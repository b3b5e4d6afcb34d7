"""Where a verdict's words come from: one vocabulary for every row of the reproduction report.

A row answers one question about one claim; its verdict says which kind of answer it is.

=========================  ==============================================================
``reproduced``             a claim about models, tested on a model that can test it, holds
``not reproduced``         the same test, and the claim fails
``not comparable (model)`` a magnitude the paper measured on its own model (GPT-3, or v2's
                           trained transformers) that this different model misses; or any
                           claim about models read on a predictor that is no model at all
                           (an exact reference, a planted effect): the row is then a control
``not comparable (scale)`` the paper's figure belongs to a setting of another size (a grid,
                           a length) than the one measured, and the number depends on it
``not testable``           the interval still holds the paper's value, or crosses the edge
                           of its stated margin: too little data at this preset; `why` says
                           what would make it testable
``outside the premise``    the claim is a theorem's conclusion and the measured curve fails
                           the theorem's premise: the theorem says nothing about it
``follows from averaging`` true for any predictor whose orderings are independent draws (the
                           central limit theorem): it cannot tell one model from another
``not a model claim``      computed from exact references or the paper's own arithmetic: the
                           same for every model
``cotplan check``          a check cotplan adds; not a claim of the paper
=========================  ==============================================================

The first six answer claims about models; `tally` counts every category apart and
`model_claims` counts only those six. The last three carry `holds` (did the statement hold
where it was evaluated) so a reader still sees, for example, that the paper's worked example
does not add up.

One rule for every row with an interval (`margin_verdict`; `value_verdict` adds the words):
against the paper's value ± its stated margin, a 95% interval wholly inside the band is
"reproduced"; one wholly outside it (no point in common) is a miss; any other (it holds the
paper's value but is too wide to lie inside the band, or crosses an edge) is "not testable".
A miss is "not reproduced", except where the quantity is the paper's model's own magnitude (a
GPT-3 figure, a period tied to GPT-3's learned absolute positions) and the predictor is another
model: then it is "not comparable (model)". Nothing else earns "not comparable".

Every other rule is two-sided too (`settles`, `claim_verdict`): a claim holds when its 95%
interval lies wholly inside the region the claim names ("exponent ≤ −0.5", "within ±δ of the
best Bayesian"), fails when the interval lies wholly outside it, and is "not testable" when the
interval crosses the region's edge. Reading "not wholly inside" as a failure would call an
uninformative interval, such as −0.698 [−1.673, −0.326] against "≤ −0.5", a refutation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import pandas as pd

from cotplan.intervals import Interval
from cotplan.intervals import compact as fmt

__all__ = [
    "COTPLAN_CHECK",
    "FOLLOWS_FROM_AVERAGING",
    "MEANINGS",
    "MODEL_CLAIM_VERDICTS",
    "NOT_A_MODEL_CLAIM",
    "NOT_COMPARABLE_MODEL",
    "NOT_COMPARABLE_SCALE",
    "NOT_REPRODUCED",
    "NOT_TESTABLE",
    "OUTSIDE_PREMISE",
    "REPRODUCED",
    "VERDICTS",
    "ReportRow",
    "Settled",
    "Verdict",
    "as_control",
    "capability_line",
    "claim_verdict",
    "is_paper_model",
    "margin_verdict",
    "model_claims",
    "rows_frame",
    "settles",
    "tally",
    "value_verdict",
]

Verdict = Literal[
    "reproduced",
    "not reproduced",
    "not comparable (model)",
    "not comparable (scale)",
    "not testable",
    "outside the theorem's premise",
    "follows from averaging",
    "not a model claim",
    "cotplan check",
]
REPRODUCED: Verdict = "reproduced"
NOT_REPRODUCED: Verdict = "not reproduced"
NOT_COMPARABLE_MODEL: Verdict = "not comparable (model)"
NOT_COMPARABLE_SCALE: Verdict = "not comparable (scale)"
NOT_TESTABLE: Verdict = "not testable"
OUTSIDE_PREMISE: Verdict = "outside the theorem's premise"
FOLLOWS_FROM_AVERAGING: Verdict = "follows from averaging"
NOT_A_MODEL_CLAIM: Verdict = "not a model claim"
COTPLAN_CHECK: Verdict = "cotplan check"

#: Every verdict, in the order the report lists them.
VERDICTS: tuple[Verdict, ...] = (
    REPRODUCED,
    NOT_REPRODUCED,
    NOT_COMPARABLE_MODEL,
    NOT_COMPARABLE_SCALE,
    NOT_TESTABLE,
    OUTSIDE_PREMISE,
    FOLLOWS_FROM_AVERAGING,
    NOT_A_MODEL_CLAIM,
    COTPLAN_CHECK,
)
#: The verdicts that answer a claim of the paper about models.
MODEL_CLAIM_VERDICTS: tuple[Verdict, ...] = VERDICTS[:6]

#: One line per verdict, printed under the report's table.
MEANINGS: dict[Verdict, str] = {
    REPRODUCED: "a claim about models, tested on a model that can test it, holds",
    NOT_REPRODUCED: "the same test, and the claim fails",
    NOT_COMPARABLE_MODEL: "a magnitude the paper measured on its own model that this different "
    "model misses, or a claim about models read on a predictor that is no model (a control)",
    NOT_COMPARABLE_SCALE: "the paper's figure belongs to a setting of another size than the one "
    "measured",
    NOT_TESTABLE: "the interval holds the paper's value or crosses its margin: too little data "
    "at this preset; the row says what would make it testable",
    OUTSIDE_PREMISE: "the measured curve fails the theorem's premise, so the theorem's "
    "conclusion is not tested by it",
    FOLLOWS_FROM_AVERAGING: "true for any predictor whose orderings are independent draws: it "
    "cannot tell one model from another",
    NOT_A_MODEL_CLAIM: "computed from exact references or the paper's arithmetic: the same for "
    "every model",
    COTPLAN_CHECK: "a check cotplan adds, not a claim of the paper",
}


@dataclass(frozen=True)
class ReportRow:
    """One headline claim: the paper's number beside the measured one and the theoretical limit.

    `verdict` takes its words from `cotplan.research.experiments.verdicts`. `breaks_limit` is True
    when a reported or measured number is impossible under the stated limit (for example, beating
    the Bayes mixture in expectation under its own prior). `holds` says whether the statement held
    where it was evaluated, for rows whose verdict is not about a model (follows from averaging,
    not a model claim, cotplan check). `control` is set on the rows of a predictor that is no
    model: the verdict the row would have had on a model.
    """

    experiment: str
    claim: str
    paper: str
    measured: float | None
    interval: Interval | None
    limit: str
    verdict: Verdict
    why: str
    breaks_limit: bool = False
    measured_text: str = ""
    holds: bool | None = None
    control: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "claim": self.claim,
            "paper": self.paper,
            "measured": self.measured_text or fmt(self.measured),
            "interval": "" if self.interval is None else str(self.interval),
            "limit": self.limit,
            "verdict": self.verdict,
            "holds": "" if self.holds is None else ("yes" if self.holds else "no"),
            "why": self.why,
            "breaks_limit": self.breaks_limit,
            "control": self.control,
        }

    @property
    def label(self) -> str:
        """The verdict with its outcome where the verdict alone does not say it."""
        if self.holds is None:
            return self.verdict
        return f"{self.verdict}: {'holds' if self.holds else 'fails'}"


def rows_frame(rows: list[ReportRow]) -> pd.DataFrame:
    """The side-by-side table: one row per claim."""
    return pd.DataFrame([r.as_dict() for r in rows])


#: The model behind the paper's v1 figures; a miss on it would be "not reproduced".
PAPER_MODEL_MARKERS = ("text-davinci-002",)


def is_paper_model(name: str) -> bool:
    """True when `name` is the model the paper measured (GPT-3 text-davinci-002)."""
    lowered = name.lower()
    return any(marker in lowered for marker in PAPER_MODEL_MARKERS)


Settled = Literal["holds", "fails", "undecided"]


def settles(ci: Interval, low: float, high: float) -> Settled:
    """Whether a 95% interval settles that the value lies in [low, high] (ends may be ±inf).

    "holds": the interval lies wholly inside; "fails": wholly outside (no point in common);
    "undecided": it crosses an edge, or an end could not be computed (NaN).
    """
    if math.isnan(ci.low) or math.isnan(ci.high) or math.isnan(low) or math.isnan(high):
        return "undecided"
    if low <= ci.low and ci.high <= high:
        return "holds"
    if ci.high < low or ci.low > high:
        return "fails"
    return "undecided"


def claim_verdict(ci: Interval, low: float, high: float) -> Verdict:
    """The three-way verdict on a structural claim "the value lies in [low, high]".

    Wholly inside: "reproduced"; wholly outside: "not reproduced"; across an edge or not
    computed: "not testable" (the row's `why` should say what would narrow the interval).
    """
    outcome = settles(ci, low, high)
    if outcome == "holds":
        return REPRODUCED
    if outcome == "fails":
        return NOT_REPRODUCED
    return NOT_TESTABLE


def margin_verdict(
    ci: Interval,
    value: float,
    margin: float,
    *,
    magnitude: bool = False,
    paper_model: bool = True,
) -> Verdict:
    """The one two-sided rule for a claim "the quantity is `value` ± `margin`".

    Wholly inside the band: "reproduced". Wholly outside it: "not reproduced", or "not
    comparable (model)" when the quantity is the paper's model's own magnitude (`magnitude`)
    and the predictor is not that model (`paper_model` False). Anything else (the interval
    holds `value` but is wider than the band, crosses an edge, or is not computed): "not
    testable". `margin` may be 0 (then only an interval excluding `value` is decided).
    """
    outcome = settles(ci, value - margin, value + margin)
    if outcome == "holds":
        return REPRODUCED
    if outcome == "fails":
        return NOT_COMPARABLE_MODEL if magnitude and not paper_model else NOT_REPRODUCED
    return NOT_TESTABLE


def value_verdict(
    ci: Interval,
    paper: float,
    err: float,
    *,
    predictor: str,
    paper_model: str,
    n_sequences: int | None = None,
    max_width_factor: float = 4.0,
) -> tuple[Verdict, str]:
    """The verdict on the paper's model's magnitude (value ± err, 95% interval) and its reason.

    `margin_verdict` with `magnitude=True`: an interval wholly outside [paper − err, paper + err]
    is a miss however wide it is ("not reproduced" on the paper's own model, "not comparable
    (model)" on any other); one wholly inside is "reproduced"; any other is "not testable", and
    the row says roughly how many sequences would narrow it to the band's width (widths fall as
    1/√n). `max_width_factor` is kept for callers; the rule no longer needs it.
    """
    del max_width_factor
    low, high = paper - err, paper + err
    width = ci.high - ci.low
    note = f"the paper measured {paper_model}; this is {predictor}"
    if not (math.isfinite(ci.low) and math.isfinite(ci.high)):
        return NOT_TESTABLE, f"no interval could be computed; {note}"
    verdict = margin_verdict(ci, paper, err, magnitude=True, paper_model=is_paper_model(predictor))
    if verdict == REPRODUCED:
        return REPRODUCED, f"the interval lies within the paper's band ±{err:g}; {note}"
    if verdict != NOT_TESTABLE:
        side = "above" if ci.low > high else "below"
        if verdict == NOT_REPRODUCED:
            return NOT_REPRODUCED, f"the whole interval lies {side} the paper's band; {note}"
        return NOT_COMPARABLE_MODEL, (
            f"the whole interval lies {side} the paper's band (a miss whatever its width), but "
            f"the figure is {paper_model}'s magnitude; {note}"
        )
    band = high - low
    need = ""
    if n_sequences is not None and width > 0 and band > 0:
        factor = (width / band) ** 2
        need = f"; about {math.ceil(factor * n_sequences):,} sequences (now {n_sequences}) "
        need += "would narrow it to the band's width"
    held = "holds the paper's value" if paper in ci else "crosses an edge of the paper's band"
    return NOT_TESTABLE, (
        f"the interval ({width:.3g} wide) {held} ±{err:g}, so it neither lies within the band "
        f"nor excludes it{need}; {note}"
    )


def as_control(rows: Iterable[ReportRow], predictor: str, kind: str) -> list[ReportRow]:
    """Rows of a predictor that is no model (`kind`: "exact reference", "planted effect").

    A claim about models says nothing about such a predictor: every model-claim verdict becomes
    "not comparable (model)", and `control` keeps what the row would have read on a model, so
    the row still checks the estimator (Laplace passes T1, a planted recency fails it).
    Idempotent: rows already marked as controls are left alone.
    """
    out = []
    for row in rows:
        if row.verdict in MODEL_CLAIM_VERDICTS and not row.control:
            would = row.verdict
            out.append(
                replace(
                    row,
                    verdict=NOT_COMPARABLE_MODEL,
                    control=would,
                    why=f"{predictor} is {kind}, not a language model: as a control this row "
                    f"reads '{would}'; {row.why}",
                )
            )
        else:
            out.append(row)
    return out


def tally(rows: Iterable[ReportRow]) -> dict[Verdict, int]:
    """How many rows carry each verdict, every category listed (zeros included)."""
    counts: dict[Verdict, int] = dict.fromkeys(VERDICTS, 0)
    for row in rows:
        counts[row.verdict] += 1
    return counts


def model_claims(rows: Iterable[ReportRow]) -> dict[Verdict, int]:
    """The tally restricted to claims about models (the first six verdicts)."""
    full = tally(rows)
    return {v: full[v] for v in MODEL_CLAIM_VERDICTS}


def capability_line(rows: Sequence[ReportRow], predictor: str, kind: str) -> str:
    """One line: what this predictor can and cannot test, from its own rows."""
    counts = tally(rows)
    testable = counts[REPRODUCED] + counts[NOT_REPRODUCED]
    if kind != "model":
        return (
            f"{predictor} is {kind}, not a language model: it tests none of the paper's claims "
            f"about models ({sum(model_claims(rows).values())} rows read as controls), only the "
            "estimators, the exact references and the paper's arithmetic."
        )
    return (
        f"{predictor} can test the paper's structural claims (the form of the gap, a period, "
        "martingale violations, Bayes in expectation, the excess-risk rate; "
        f"{_rows(testable)} decided here) but "
        f"not the paper's model's magnitudes ({_rows(counts[NOT_COMPARABLE_MODEL])} not "
        f"comparable); {_rows(counts[NOT_TESTABLE])} not testable here (each says what would "
        "make it testable: more data than this preset, or another command)"
        + (
            f"; {_rows(counts[OUTSIDE_PREMISE])} outside the theorem's premise."
            if counts[OUTSIDE_PREMISE]
            else "."
        )
    )


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"
