"""The reproduction report: every headline number of the paper beside what cotplan measured.

`reproduction_report(predictor, preset)` runs the experiments (martingale gap, positional
debiasing, order variance, entropy efficiency, Falck's checks) on one predictor and collects
their `paper_rows()` plus the rows that need no model (the paper's own CoT arithmetic), each
with a verdict whose words come from `cotplan.research.experiments.verdicts`, and why.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.intervals import compact as fmt
from cotplan.io import write_csv, write_text
from cotplan.research.experiments._common import (
    Drawer,
    RunInfo,
    ensure_folder,
    finish_rows,
    predictor_kind,
)
from cotplan.research.experiments.debias import DebiasResult, positional_debias
from cotplan.research.experiments.entropy import ENTROPY_FULL, ENTROPY_QUICK, entropy_efficiency
from cotplan.research.experiments.falck import FALCK_FULL, FALCK_QUICK, falck_tests
from cotplan.research.experiments.martingale import (
    MARTINGALE_FULL,
    MARTINGALE_QUICK,
    PAPER_MARTINGALE,
    martingale_gap,
)
from cotplan.research.experiments.order import ORDER_FULL, ORDER_QUICK, order_variance
from cotplan.research.experiments.predictors import Predictor, ProgressFn
from cotplan.research.experiments.verdicts import (
    MEANINGS,
    NOT_A_MODEL_CLAIM,
    NOT_TESTABLE,
    VERDICTS,
    ReportRow,
    Verdict,
    capability_line,
    model_claims,
    rows_frame,
    tally,
)

__all__ = [
    "EXPERIMENTS",
    "PRESETS",
    "ReproductionReport",
    "StageFn",
    "check_params",
    "cot_example_rows",
    "planned_predictions",
    "reproduction_report",
]

#: The experiments a report can run, in order.
EXPERIMENTS = ("martingale", "debias", "order", "entropy", "falck")

#: Keyword presets per experiment: "quick" (seconds, for tests and notebooks) and "full" (the
#: paper's grid where it has one).
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "quick": {
        "martingale": MARTINGALE_QUICK,
        "debias": {"n_boot": 100, "n_permutations": 199},
        "order": ORDER_QUICK,
        "entropy": ENTROPY_QUICK,
        "falck": FALCK_QUICK,
    },
    "full": {
        "martingale": MARTINGALE_FULL,
        "debias": {"n_boot": 500, "n_permutations": 999},
        "order": ORDER_FULL,
        "entropy": ENTROPY_FULL,
        "falck": FALCK_FULL,
    },
}

#: Called once per stage with (stage name, predictions planned); returns the progress callback.
StageFn = Callable[[str, int], ProgressFn | None]


def planned_predictions(experiment: str, params: dict[str, Any]) -> int:
    """How many next-token distributions an experiment will read with these parameters."""
    if experiment == "martingale":
        ns = params.get("ns") or list(range(10, 199, 2))
        s = int(params.get("n_sequences", 100))
        if params.get("design", "nested") == "nested":
            return s * (int(max(ns)) - int(min(ns)) + 2)
        return s * len(ns) * 2
    if experiment == "order":
        ones = params.get("ones") or (int(params.get("n", 20)) // 2,)
        return len(ones) * int(params.get("n_orderings", 500))
    if experiment == "entropy":
        return int(params.get("n_sequences", 100)) * int(params.get("n_max", 200))
    if experiment == "falck":
        k = int(params.get("n_paths", 20))
        steps: int = sum(
            max(4, round(r * n))
            for _t in params.get("thetas", (0.3, 0.5, 0.7))
            for n in params.get("ns", (20, 50, 100))
            for r in params.get("ratios", (0.5, 2.0))
        )
        steps += (
            len(params.get("t3_ns", (20, 50, 100, 200, 400)))
            * int(params.get("t3_length", 50))
            * int(params.get("t3_contexts", 1))
        )
        return k * steps
    if experiment == "debias":
        return 0
    raise InputError(
        f"unknown experiment {experiment!r}; choose from {EXPERIMENTS}", field="experiment"
    )


class _Checked(Exception):
    """Raised by `_DryRun` at its first use: everything before it was validation."""


class _DryRun(Predictor):
    """A predictor that stops the experiment at its first prediction (see `check_params`)."""

    name = "dry run"

    def prob_one(self, prefixes: Any) -> Any:
        raise _Checked

    def prefix_probs(self, *args: Any, **kwargs: Any) -> Any:
        raise _Checked

    def sample_paths(self, *args: Any, **kwargs: Any) -> Any:
        raise _Checked


_RUNNERS: dict[str, Callable[..., Any]] = {
    "martingale": martingale_gap,
    "order": order_variance,
    "entropy": entropy_efficiency,
    "falck": falck_tests,
}


def check_params(experiment: str, params: dict[str, Any]) -> None:
    """Validate an experiment's parameters without reading a single prediction.

    The experiment runs on a predictor that stops it at its first prediction, so every check the
    experiment makes before it reads the model runs here, with the same messages: a command can
    validate all its options before it connects to a model.
    """
    if experiment == "debias":
        return  # its parameters are the preset's; its data come from the martingale run
    runner = _RUNNERS.get(experiment)
    if runner is None:
        raise InputError(
            f"unknown experiment {experiment!r}; choose from {EXPERIMENTS}", field="experiment"
        )
    try:
        runner(_DryRun(), **params)
    except _Checked:
        return
    except TypeError as exc:
        raise InputError(f"unknown parameter for {experiment}: {exc}", field="params") from exc


def cot_example_rows() -> list[ReportRow]:
    """The paper's CoT worked example (Cor 4.6) recomputed: arithmetic, no model needed."""
    alpha, n, h_cot, gap, eps = 5.0, 100, 3.0, 6.0, 0.1
    c = math.sqrt(alpha * n / (h_cot * gap))
    k_log2 = c * math.log2(1 / eps)
    k_ln = c * math.log(1 / eps)
    big = math.sqrt(alpha * 1000 / (h_cot * gap))
    return [
        ReportRow(
            "cot",
            "worked example k* = 12.8 ± 1.3 (n = 100, ε = 0.1, H = 3, α = 5, gap 6)",
            "12.8 ± 1.3",
            k_log2,
            None,
            f"k* = √(αn / (H·gap))·log(1/ε): {k_log2:.1f} with log2 (as the theorem writes), "
            f"{k_ln:.1f} with ln",
            NOT_A_MODEL_CLAIM,
            f"the paper's arithmetic, the same for every model: only the natural log lands "
            f"within ±1.3 of 12.8; the n = 1000 example (≈ 40) gives {big * math.log(10):.1f} "
            f"with ln and {big * math.log2(10):.1f} with log2, so the paper used ln while "
            "writing log2",
            measured_text=f"{k_log2:.1f} (log2) / {k_ln:.1f} (ln)",
            holds=abs(k_log2 - 12.8) <= 1.3,
        ),
        ReportRow(
            "cot",
            "optimal CoT length k* = Θ(√n·log(1/ε)) (claim 4)",
            "theorem, not validated",
            None,
            None,
            "v1 gives no empirical test",
            NOT_TESTABLE,
            "a property of reasoning tasks, not of binary sequences: testable with `cotplan plan` "
            "(B(k) per task and model, k* fitted) or with `--cot-lab FAMILIES` (lab reasoning "
            "models whose mechanism is known)",
            measured_text="see `cotplan plan`",
        ),
    ]


@dataclass(frozen=True)
class ReproductionReport:
    """Rows (claim, paper, measured, interval, limit, verdict, why) and what they cost."""

    predictor: str
    preset: str
    seed: int
    rows: tuple[ReportRow, ...]
    runs: dict[str, RunInfo]
    results: dict[str, Any] = field(repr=False)
    created: str = ""
    #: "model", or what else the predictor is ("an exact reference", "a planted effect").
    kind: str = "model"

    def to_frame(self) -> pd.DataFrame:
        return rows_frame(list(self.rows))

    def runs_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"experiment": k, **v.as_dict()} for k, v in self.runs.items()])

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.runs.values())

    def counts(self) -> dict[Verdict, int]:
        """Rows per verdict, every category listed apart (zeros included)."""
        return tally(self.rows)

    def model_claims(self) -> dict[Verdict, int]:
        """Rows per verdict among the paper's claims about models."""
        return model_claims(self.rows)

    def tally_line(self) -> str:
        """The tally in one line: every category, then the claims about models."""
        counts = self.counts()
        claims = self.model_claims()
        every = ", ".join(f"{counts[v]} {v}" for v in VERDICTS)
        about = ", ".join(f"{n} {v}" for v, n in claims.items() if n)
        return f"{every}. Claims about models ({sum(claims.values())}): {about or 'none'}."

    def capability(self) -> str:
        """One line: what this predictor can and cannot test."""
        return capability_line(self.rows, self.predictor, self.kind)

    def to_markdown(self) -> str:
        """A self-contained markdown page: the table, then the cost of each run."""
        lines = [
            f"# Reproduction report: {self.predictor}",
            "",
            f"Preset `{self.preset}`, seed {self.seed}, created {self.created}. Paper: "
            '"LLMs are Bayesian, in Expectation, not in Realization" (v1, arXiv 2507.11768); '
            f"its numbers were measured on {PAPER_MARTINGALE['model']}.",
            "",
            "| experiment | claim | paper | measured | 95% interval | limit | verdict | why |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in self.rows:
            d = row.as_dict()
            verdict = row.label + (
                " (⚠ a number here breaks the limit)" if row.breaks_limit else ""
            )
            cells = [
                d["experiment"],
                d["claim"],
                d["paper"],
                d["measured"],
                d["interval"],
                d["limit"],
                verdict,
                d["why"],
            ]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
        lines += ["", f"**Tally.** {self.tally_line()}", "", f"**Scope.** {self.capability()}", ""]
        lines += ["**What the verdicts mean** (`cotplan.research.experiments.verdicts`):", ""]
        lines += [f"- *{v}*: {MEANINGS[v]}" for v in VERDICTS]
        lines += [
            "",
            "## Cost",
            "",
            "| experiment | requests | predictions | wall s | covered mass |",
            "|---|---|---|---|---|",
        ]
        for name, run in self.runs.items():
            lines.append(
                f"| {name} | {run.requests} | {run.predictions} | {run.wall_s:.1f} | "
                f"{fmt(run.mean_covered_mass)} |"
            )
        lines += ["", f"Total model requests: {self.requests}.", ""]
        return "\n".join(lines)

    def save(self, folder: str | Path, *, draw: Drawer | None = None) -> list[Path]:
        out = ensure_folder(folder)
        written: list[Path] = []
        write_text(out / "report.md", self.to_markdown())
        write_csv(self.to_frame(), out / "report.csv")
        write_csv(self.runs_frame(), out / "report_runs.csv")
        written += [out / "report.md", out / "report.csv", out / "report_runs.csv"]
        for result in self.results.values():
            written += result.save(out, draw=draw)
        return written


def reproduction_report(
    predictor: Predictor,
    preset: str = "quick",
    seed: int = 0,
    *,
    experiments: Sequence[str] = EXPERIMENTS,
    overrides: dict[str, dict[str, Any]] | None = None,
    stage: StageFn | None = None,
) -> ReproductionReport:
    """Run the chosen experiments on `predictor` with a preset and collect every paper row.

    `overrides` replaces preset parameters per experiment (e.g. ``{"entropy": {"p": 0.5}}``).
    `stage(name, planned_predictions)` is called before each experiment and may return a
    progress callback. The lab's k* rows join in
    `cotplan.research.reproduction.reproduction_report`.
    """
    if preset not in PRESETS:
        raise InputError(f"must be one of {sorted(PRESETS)}, got {preset!r}", field="preset")
    unknown = [e for e in experiments if e not in EXPERIMENTS]
    if unknown:
        raise InputError(f"unknown {unknown}; choose from {EXPERIMENTS}", field="experiments")
    chosen = [e for e in EXPERIMENTS if e in experiments]
    if "debias" in chosen and "martingale" not in chosen:
        chosen.insert(0, "martingale")  # debiasing works on the martingale run's gaps
    params = {name: {**PRESETS[preset][name], **(overrides or {}).get(name, {})} for name in chosen}
    results: dict[str, Any] = {}
    runs: dict[str, RunInfo] = {}
    rows: list[ReportRow] = []

    def progress_for(name: str) -> ProgressFn | None:
        return stage(name, planned_predictions(name, params[name])) if stage else None

    if "martingale" in chosen:
        result = martingale_gap(
            predictor, seed=seed, progress=progress_for("martingale"), **params["martingale"]
        )
        results["martingale"], runs["martingale"] = result, result.run
        rows += result.paper_rows()
        if "debias" in chosen:
            progress_for("debias")
            debias: DebiasResult = positional_debias(result, seed=seed, **params["debias"])
            control = positional_debias(
                result,
                seed=seed,
                reference=True,
                n_boot=0,
                n_permutations=params["debias"].get("n_permutations", 999),
            )
            results["debias"] = debias
            debias_rows = [_with_control(row, control) for row in debias.paper_rows()]
            rows += finish_rows(debias_rows, result.run)
    if "order" in chosen:
        order = order_variance(
            predictor, seed=seed, progress=progress_for("order"), **params["order"]
        )
        results["order"], runs["order"] = order, order.run
        rows += order.paper_rows()
    if "entropy" in chosen:
        entropy = entropy_efficiency(
            predictor, seed=seed, progress=progress_for("entropy"), **params["entropy"]
        )
        results["entropy"], runs["entropy"] = entropy, entropy.run
        rows += entropy.paper_rows()
    if "falck" in chosen:
        falck = falck_tests(predictor, seed=seed, progress=progress_for("falck"), **params["falck"])
        results["falck"], runs["falck"] = falck, falck.run
        rows += falck.paper_rows()
    rows += cot_example_rows()
    return ReproductionReport(
        predictor=predictor.name,
        preset=preset,
        seed=seed,
        rows=tuple(rows),
        runs=runs,
        results=results,
        created=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        kind=predictor_kind(predictor),
    )


def _with_control(row: ReportRow, control: DebiasResult) -> ReportRow:
    """Add the exact-Bayes control (same sequences, no positional effect) to a debias row."""
    note = (
        f"control: exact Bayes on the same sequences gives period {control.period:.1f} "
        f"(p = {fmt(control.p_value)}), position R² {fmt(control.r2_before)}"
    )
    return replace(row, limit=f"{row.limit}; {note}")
