"""The preregistered k* protocol against any served reasoning model (`cotplan kstar study`).

The lab's families have templated traces (one step per input), so k* ∝ n there by construction.
This runs the same law test on a task whose minimal trace the model writes in its own words:
the sum of n one-digit numbers, posed in plain prose (`kstar_items`), over sizes n = 8..256.

1. **The protocol first.** `check_protocol` validates every option (before a backend is
   connected); `kstar_study` writes the protocol (sizes, items, seeds, ε grid, the margins, the
   verdict rules, the measure) to ``protocol.json`` in the report folder before its first
   request, so the reading cannot be chosen after the data.
2. **The curve.** Per item, one greedy run at the size's cap (`max_budget`) is cut at every
   budget of the size's grid and the answer is forced there (`budgeted_answers`). B(k) is the
   teacher-forced log-loss of the gold answer, −ln P(gold | question, trace cut at k, answer
   marker), read from the server's prompt log-probabilities (vLLM's ``prompt_logprobs``) where
   it gives them on a text-completion endpoint; elsewhere (the embedded models, chat-only APIs)
   the measure is the forced answer's 0/1 error, and the report says so.
3. **The law**, by the lab's own readers (`cotplan.research.lab.reasoning.logloss`): the
   premise test on B's shape per size, k*(n, ε) raw and robust with item-bootstrap intervals,
   the n-exponent β with the house verdict (`law_verdict`: "outside the theorem's premise"
   where the premise fails), the in-domain ε-ratio k*(small ε)/k*(large ε) against log(1/ε).
4. **Trace length or information.** The uncapped trace length L(n) (the run's reasoning
   tokens) has its own n-exponent δ; k* regressed on L gives γ (log k* on log L). A k* that
   follows the trace the model happens to write (β within the margin of δ) is a trace-length
   law; β near ½ while δ is not is the information law the theorem states.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.budgeted import budgeted_answers, resolve_mode
from cotplan.intervals import percentile_interval
from cotplan.io import write_csv, write_text
from cotplan.research.lab.reasoning.exponent import EXPONENT_MARGIN
from cotplan.research.lab.reasoning.logloss import LogLossStudy, in_domain, logloss_curve_rows
from cotplan.research.lab.reasoning.premise import PREMISE_LEVEL, PREMISE_TEXT, SEGMENTS
from cotplan.tasks.item import TaskItem

__all__ = [
    "DEFAULT_EPS",
    "DEFAULT_SIZES",
    "TASK",
    "KstarProtocol",
    "KstarStudy",
    "check_protocol",
    "gold_logprob",
    "kstar_items",
    "kstar_study",
    "max_budget",
]

TASK = "kstar-sum"
DEFAULT_SIZES: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
DEFAULT_EPS: tuple[float, ...] = (0.5, 0.3, 0.2, 0.1)
#: The vocabulary assumed for the domain's 1/V bound when the server does not say (any
#: modern tokenizer's is larger, so the bound is n^−1/4 at every size tested).
DEFAULT_VOCAB = 32_000
_FLOOR = 1e-12
_MEASURES = ("auto", "logprob", "accuracy")

RULES: tuple[str, ...] = (
    f"premise ({PREMISE_TEXT}): tested per size over {SEGMENTS} equal parts of [0, the size's "
    f"cap], t intervals over items, {PREMISE_LEVEL:.0%} Bonferroni; where it fails at a size "
    "the exponent is read over, the law reads 'outside the theorem's premise'",
    f"n-exponent β of k*: 'reproduced' when its 95% item-bootstrap interval lies within "
    f"[{0.5 - EXPONENT_MARGIN:g}, {0.5 + EXPONENT_MARGIN:g}], 'not reproduced' when it lies "
    "wholly outside, 'not testable' otherwise",
    "ε-form: k*(small ε)/k*(large ε) inside the theorem's domain [max(n^−1/4, 1/V), 1/2] is "
    "'consistent with log(1/ε)' when its interval holds log(1/ε_small)/log(1/ε_large)",
    f"trace length or information: 'trace-length law' when β's interval holds δ (the uncapped "
    f"length's n-exponent) ± {EXPONENT_MARGIN:g} and excludes [0.4, 0.6]; 'information law' "
    "when β is reproduced and δ lies outside β's interval by more than the margin; 'cannot "
    "tell' otherwise",
)


@dataclass(frozen=True)
class KstarProtocol:
    """What the study will do, fixed before its first request (`check_protocol` builds it)."""

    backend: str
    sizes: tuple[int, ...] = DEFAULT_SIZES
    items: int = 200
    seeds: int = 3
    eps: tuple[float, ...] = DEFAULT_EPS
    budget_points: int = 12
    tokens_per_input: int = 16
    min_tokens: int = 256
    n_bootstrap: int = 200
    measure: str = "auto"
    vocab: int = DEFAULT_VOCAB
    task: str = TASK
    exponent_margin: float = EXPONENT_MARGIN
    premise_level: float = PREMISE_LEVEL
    premise_segments: int = SEGMENTS
    rules: tuple[str, ...] = RULES

    def budgets(self, n: int) -> list[int]:
        """The budgets asked at size n: `budget_points` evenly from 0 to the cap."""
        top = max_budget(n, self.tokens_per_input, self.min_tokens)
        return sorted({round(x) for x in np.linspace(0, top, self.budget_points)})

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["budgets"] = {str(n): self.budgets(n) for n in self.sizes}
        out["requests"] = self.requests()
        out["generated_tokens_at_most"] = self.generated_tokens()
        return out

    def generated_tokens(self, answer_tokens: int = 16) -> int:
        """At most this many generated tokens: each item's uncapped run to its cap and a
        forced answer of `answer_tokens` per budget (real traces end sooner)."""
        per_item = sum(
            max_budget(n, self.tokens_per_input, self.min_tokens)
            + answer_tokens * len(self.budgets(n))
            for n in self.sizes
        )
        return per_item * self.items * self.seeds

    def plan_text(self) -> str:
        """The protocol in lines, as `cotplan kstar study --plan-only` prints it."""
        lines = [
            f"task: {self.task} (the sum of n one-digit numbers, in plain words)",
            f"sizes: {', '.join(map(str, self.sizes))}; {self.items} items per size and seed; "
            f"{self.seeds} seeds; ε: {', '.join(f'{e:g}' for e in self.eps)}",
            *(f"budgets at n = {n}: {self.budgets(n)}" for n in self.sizes),
            f"requests: {self.requests():,} generation requests (one more prompt-scoring "
            "request per budget where B(k) is read from prompt logprobs)",
            f"generated tokens: at most {self.generated_tokens():,}",
            *(f"rule: {rule}" for rule in self.rules),
        ]
        return "\n".join(lines)

    def requests(self) -> int:
        """Generation requests: one run and one forced answer per budget, per item and seed
        (prompt scoring, where used, adds one per budget)."""
        per_item = sum(1 + len(self.budgets(n)) for n in self.sizes)
        return per_item * self.items * self.seeds


def max_budget(n: int, tokens_per_input: int = 16, min_tokens: int = 256) -> int:
    """The cap of the uncapped run at size n: room for `tokens_per_input` per number."""
    return max(min_tokens, tokens_per_input * n)


def _positive(value: object, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"must be an integer >= {low}, got {value!r}", field=name)
    return value


def check_protocol(
    backend: str,
    *,
    sizes: Sequence[int] = DEFAULT_SIZES,
    items: int = 200,
    seeds: int = 3,
    eps: Sequence[float] = DEFAULT_EPS,
    budget_points: int = 12,
    tokens_per_input: int = 16,
    min_tokens: int = 256,
    n_bootstrap: int = 200,
    measure: str = "auto",
) -> KstarProtocol:
    """Every option checked (an `InputError` naming the option), before anything connects."""
    if not isinstance(backend, str) or not backend.strip():
        raise InputError(
            "must name a backend, e.g. openai:MODEL or local:thinking-long", field="backend"
        )
    grid = [_positive(n, "sizes", 2) for n in sizes]
    if len(grid) < 2 or len(set(grid)) != len(grid):
        raise InputError(f"needs at least two distinct sizes, got {list(sizes)}", field="sizes")
    targets = [float(e) for e in eps]
    if not targets or any(not 0 < e < 1 for e in targets) or len(set(targets)) != len(targets):
        raise InputError(f"needs distinct targets in (0, 1), got {list(eps)}", field="eps")
    if measure not in _MEASURES:
        raise InputError(f"must be one of {', '.join(_MEASURES)}, got {measure!r}", field="measure")
    return KstarProtocol(
        backend=backend,
        sizes=tuple(sorted(grid)),
        items=_positive(items, "items", 5),
        seeds=_positive(seeds, "seeds"),
        eps=tuple(sorted(targets, reverse=True)),
        budget_points=_positive(budget_points, "budget_points", 3),
        tokens_per_input=_positive(tokens_per_input, "tokens_per_input"),
        min_tokens=_positive(min_tokens, "min_tokens"),
        n_bootstrap=_positive(n_bootstrap, "n_bootstrap", 20),
        measure=measure,
    )


def kstar_items(n: int, count: int, seed: int) -> list[TaskItem]:
    """`count` sums of n one-digit numbers in plain words, reproducible from (seed, n)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, n, 0x6B73]))
    out = []
    for index in range(count):
        digits = [int(d) for d in rng.integers(1, 10, size=n)]
        out.append(
            TaskItem(
                id=f"{TASK}-n{n}-s{seed}-{index:04d}",
                prompt=f"Add up these {n} numbers: {', '.join(map(str, digits))}. "
                "What is their sum?",
                answer=str(sum(digits)),
                kind="integer",
                n=n,
                family=TASK,
            )
        )
    return out


def gold_logprob(rows: Sequence[tuple[str, dict[str, float]]], prefix: str) -> float:
    """The log-probability of the prompt's text after `prefix`: the sum of its tokens' own
    log-probabilities, from prompt scoring's rows (token text, {alternative: logprob}); a
    token that straddles the end of the prefix counts with the answer."""
    offset, total, counted = 0, 0.0, 0
    for text, alternatives in rows:
        end = offset + len(text)
        if end > len(prefix):
            if text not in alternatives:
                raise InputError(
                    f"the server gave no log-probability for the prompt's token {text!r}",
                    field="prompt_logprobs",
                )
            total += alternatives[text]
            counted += 1
        offset = end
    if counted == 0:
        raise InputError("the scored text holds nothing after the prefix", field="prompt_logprobs")
    return total


def _scores_prompts(backend: Backend) -> bool:
    """The server scores prompts and the answers are written as text with a known chat
    template (template mode), so there is an exact prompt to score the gold answer after."""
    return bool(
        getattr(backend, "supports_prompt_logprobs", False)
        and callable(getattr(backend, "prompt_logprobs", None))
        and resolve_mode(backend) == "template"
    )


def resolve_measure(protocol: KstarProtocol, backend: Backend) -> str:
    """ "logprob" where the backend scores prompts on a text endpoint, else "accuracy"; an
    explicit "logprob" the backend cannot serve is an error, not a silent fallback."""
    able = _scores_prompts(backend)
    if protocol.measure == "logprob" and not able:
        raise InputError(
            "the backend does not score prompts as text (vLLM's prompt_logprobs on a "
            "completions endpoint, for a model whose chat template cotplan knows): use "
            "--measure accuracy, or --prompt-logprobs on a vLLM server",
            field="measure",
        )
    if protocol.measure == "auto":
        return "logprob" if able else "accuracy"
    return protocol.measure


def _answer_rows(
    backend: Backend, protocol: KstarProtocol, measure: str, item: TaskItem, seed: int
) -> list[dict[str, Any]]:
    grid = protocol.budgets(int(item.n or 0))
    answers = budgeted_answers(backend, item, grid)
    full = answers[-1]
    rows = []
    for answer in answers:
        wrong = float(not answer.correct)
        if measure == "logprob":
            prompt = answer.answer_prompt
            if not prompt:  # chat mode: no exact text to score, and no silent change of measure
                raise InputError(
                    "the answers were not written as text (template mode), so there is no "
                    "prompt to score the gold answer after: use --measure accuracy",
                    field="measure",
                )
            gold = str(item.answer) if prompt.endswith((" ", "\n")) else f" {item.answer}"
            scored = backend.prompt_logprobs(prompt + gold, top_logprobs=1)  # type: ignore[attr-defined]
            p = math.exp(gold_logprob(scored, prompt))
            loss = -math.log(max(p, _FLOOR))
        else:
            p, loss = 1.0 - wrong, wrong
        rows.append(
            {
                "family": TASK,
                "item": f"{item.id}",
                "seed": seed,
                "n": item.n,
                "k": answer.k,
                "p_correct": p,
                "loss": loss,
                "wrong": wrong,
                "reasoning_tokens": answer.reasoning_tokens,
                "uncapped": full.reasoning_tokens,
                "censored": bool(full.truncated),
            }
        )
    return rows


@dataclass(frozen=True)
class KstarStudy:
    """The protocol's result: `law` (the lab's log-loss reader on this model's answers),
    `lengths` (uncapped trace length per size), `length_law` (k* on L per ε) and `verdicts`."""

    protocol: KstarProtocol
    measure: str
    model: str
    law: LogLossStudy
    lengths: pd.DataFrame = field(repr=False)
    length_law: pd.DataFrame = field(repr=False)
    seconds: float = 0.0

    def to_frame(self) -> pd.DataFrame:
        """The curve per (n, k): B (or the error) with its interval."""
        return self.law.to_frame()

    @property
    def measure_text(self) -> str:
        if self.measure == "logprob":
            return "B(k) = teacher-forced −ln P(gold answer) from the server's prompt logprobs"
        return (
            "the forced answer's 0/1 error (the server gives no prompt logprobs here, so B(k) "
            "is not measured: the 'B' rows repeat the error)"
        )

    def summary(self) -> str:
        lines = [
            f"k* protocol on {self.model} ({self.protocol.task}, sizes "
            f"{', '.join(map(str, self.protocol.sizes))}, {self.protocol.items} items x "
            f"{self.protocol.seeds} seeds): measure: {self.measure_text}",
            self.law.verdict(),
        ]
        for row in self.length_law.itertuples():
            lines.append(
                f"ε = {row.eps:g}: k* ∝ L^{row.gamma:.2f} on the uncapped length; β "
                f"{row.beta:.2f} [{row.low:.2f}, {row.high:.2f}], δ {row.delta:.2f}: "
                f"{row.reading_word}; law: {row.law}"
            )
        return "\n".join(lines)

    def save(self, folder: str | Path) -> list[Path]:
        out = Path(folder).expanduser()
        paths = self.law.save(out)
        paths.append(write_csv(self.lengths, out / "kstar_lengths.csv"))
        paths.append(write_csv(self.length_law, out / "kstar_length_law.csv"))
        paths.append(write_text(out / "kstar_report.md", self.summary() + "\n"))
        return paths


def _length_table(answers: pd.DataFrame, n_bootstrap: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for size, group in answers.groupby("n"):
        per_item = group.groupby("item")[["uncapped", "censored"]].first()
        values = per_item["uncapped"].to_numpy(float)
        draws = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(200)]
        interval = percentile_interval(np.asarray(draws))
        rows.append(
            {
                "n": int(str(size)),
                "uncapped_mean": float(values.mean()),
                "low": interval.low,
                "high": interval.high,
                "censored_share": float(per_item["censored"].mean()),
            }
        )
    return pd.DataFrame(rows)


def _slope(x: Any, y: Any) -> float:
    xs, ys = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    keep = np.isfinite(xs) & np.isfinite(ys)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(xs[keep], ys[keep], 1)[0])


def _length_law(law: LogLossStudy, lengths: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Per ε: γ (log k* on log L), β (k*'s n-exponent, robust reading) and δ (L's)."""
    name = "B" if measure == "logprob" else "error"
    delta = _slope(lengths["n"], lengths["uncapped_mean"])
    length_of = dict(zip(lengths["n"], lengths["uncapped_mean"], strict=True))
    rows = []
    for eps in law.eps_grid:
        mine = law.budgets[(law.budgets["measure"] == name) & (law.budgets["eps"] == eps)]
        ks = mine["k_robust"].to_numpy(float)
        ls = np.array([length_of[int(n)] for n in mine["n"]], dtype=float)
        ex = law.exponents
        row = ex[(ex["measure"] == name) & (ex["reading"] == "robust") & (ex["eps"] == eps)]
        beta, low, high = (float(row[c].iloc[0]) for c in ("beta", "low", "high"))
        law_word = str(row["law"].iloc[0])
        rows.append(
            {
                "measure": name,
                "eps": eps,
                "gamma": _slope(ls, ks),
                "beta": beta,
                "low": low,
                "high": high,
                "delta": delta,
                "reading_word": length_word(low, high, delta, beta=beta),
                "law": law_word,
            }
        )
    return pd.DataFrame(rows)


def length_word(low: float, high: float, delta: float, *, beta: float = 0.0) -> str:
    """Trace-length law, information law, or cannot tell (`RULES`, last rule). No word without
    an estimate: where k* was not reached at some size, `beta` is NaN and its interval's ends
    are whatever the resamples that reached it gave (a single point, say), so they decide
    nothing."""
    m = EXPONENT_MARGIN
    if not math.isfinite(beta):
        return "cannot tell (k* not reached at every size)"
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(delta)):
        return "cannot tell (no interval)"
    sqrt_band = 0.5 - m <= low and high <= 0.5 + m
    overlaps_band = low <= 0.5 + m and high >= 0.5 - m
    if low - m <= delta <= high + m and not overlaps_band:
        return f"trace-length law (k* grows as the uncapped trace, n^{delta:.2f})"
    if sqrt_band and not low - m <= delta <= high + m:
        return f"information law (k* ~ √n while the trace grows as n^{delta:.2f})"
    return "cannot tell a trace-length law from an information law"


def kstar_study(
    backend: Backend,
    protocol: KstarProtocol,
    folder: str | Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> KstarStudy:
    """Run `protocol` on `backend`, writing ``protocol.json`` to `folder` before any request
    and the tables and report after (see the module docstring)."""
    out = Path(folder).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    measure = resolve_measure(protocol, backend)
    record = {**protocol.to_dict(), "measure_used": measure, "model": backend.model}
    write_text(out / "protocol.json", json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    total, done = protocol.items * protocol.seeds * len(protocol.sizes), 0
    for seed in range(protocol.seeds):
        for n in protocol.sizes:
            for item in kstar_items(n, protocol.items, seed):
                rows += _answer_rows(backend, protocol, measure, item, seed)
                done += 1
                if progress is not None:
                    progress(done, total)
    answers = pd.DataFrame(rows)
    tables = logloss_curve_rows(
        answers, protocol.eps, protocol.n_bootstrap, 0, protocol.vocab, mechanism=False
    )
    budgets = tables.budgets
    budgets["in_domain"] = [
        in_domain(int(n), float(e), protocol.vocab)
        for n, e in zip(budgets["n"], budgets["eps"], strict=True)
    ]
    law = LogLossStudy(
        family=TASK,
        model=backend.model,
        vocab=protocol.vocab,
        eps_grid=protocol.eps,
        answers=answers,
        curve=tables.curve,
        budgets=budgets,
        exponents=tables.exponents,
        eps_form=tables.eps_form,
        premise=tables.premise,
    )
    lengths = _length_table(answers, protocol.n_bootstrap, 0)
    study = KstarStudy(
        protocol=protocol,
        measure=measure,
        model=backend.model,
        law=law,
        lengths=lengths,
        length_law=_length_law(law, lengths, measure),
        seconds=time.perf_counter() - started,
    )
    study.save(out)
    return study
