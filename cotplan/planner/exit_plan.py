"""A certified early exit as plain JSON, and the call that applies it (`exit="certified"`).

`ExitPlan.from_early_exit(result, model=...)` keeps what deployment needs from
`certify_early_exit`: per size the ceiling (the certified fixed cap), the probe interval and the
certified rule (a rule that never fires where the cap stays), with ε, δ and the model.
`save`/`load` write and read it as strict JSON::

    {"schema": 1, "kind": "cotplan-exit", "model": "...", "eps": 0.25, "delta": 0.05,
     "bill_prompt": false,
     "sizes": {"9": {"ceiling": 96, "every": 16, "rule": {"agree": 3, "min_prob": null}}}}

`exit_from_calibration(frame, ceilings, eps, ...)` is the step `cotplan plan --exit certified`
takes after the plan: certify on the calibration frame with the plan's certified caps as
ceilings, and return the exit plan, or None and the reason in one line where the calibration
cannot certify one (no forced answers recorded, or not every multiple of `every` the rules would
probe). `exit_plan_for(path, plan_path, eps=..., model=...)` reads the exit plan `cotplan run
--exit certified` applies (default: exit.json beside the plan) and refuses one made for another
ε or model.

`answer_with_exit(backend, item, plan)` answers one item under the plan's rule for the item's
size (`cotplan.generate.probing.probe_answer`); a backend whose thinking cannot be probed
(hidden reasoning, chat-only APIs) raises `CapabilityError`, and the caller keeps the plan's
fixed cap there.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.generate.probing import ExitRule, ProbedAnswer, StoppingRule, probe_answer
from cotplan.io import read_json, write_text
from cotplan.planner.early_exit import EarlyExit, Family, certify_early_exit
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import item_size

__all__ = [
    "DEFAULT_PROBE_EVERY",
    "EXIT_CHOICES",
    "EXIT_SCHEMA",
    "ExitPlan",
    "answer_with_exit",
    "exit_from_calibration",
    "exit_plan_for",
    "load_exit_plan",
]

EXIT_SCHEMA = 1
#: What `--exit` takes: the fixed cap alone, or the certified early exit under it.
EXIT_CHOICES = ("none", "certified")
#: Probe every this many thinking tokens unless told otherwise (`--probe-every`).
DEFAULT_PROBE_EVERY = 16
_KIND = "cotplan-exit"
_KEYS = {"schema", "kind", "model", "eps", "delta", "bill_prompt", "sizes"}


@dataclass(frozen=True)
class ExitPlan:
    """Per size, the certified exit to deploy (see the module docstring)."""

    model: str
    eps: float
    delta: float
    sizes: Mapping[int, ExitRule]
    bill_prompt: bool = False

    @classmethod
    def from_early_exit(
        cls, result: EarlyExit, *, model: str, every: int, frame: pd.DataFrame
    ) -> ExitPlan:
        """The deployable part of `result`, certified on `frame`; `every` is the probe
        interval the rules were certified at (`certify_early_exit(every=...)`; required, since
        a rule certified on probes every m tokens says nothing about other intervals)."""
        if result.every is not None and result.every != every:
            raise InputError(
                f"the rules were certified probing every {result.every} tokens, got {every}",
                field="every",
            )
        for c in result.sizes:
            # Live probing reads every multiple of `every` below the ceiling; the certificate
            # covers it only where the calibration answered each of those budgets.
            have = set(frame.loc[frame["n"] == c.n, "k"].astype(int))
            missing = [k for k in range(every, c.ceiling, every) if k not in have]
            if c.rule is not None and missing:
                raise InputError(
                    f"the calibration has no answers at k = {missing[:5]} (n = {c.n}): live "
                    f"probes every {every} tokens would read answers the certificate never "
                    f"saw; calibrate every multiple of {every} up to the cap",
                    field="frame",
                )
        sizes = {
            c.n: ExitRule(ceiling=c.ceiling, every=every, rule=c.rule or StoppingRule())
            for c in result.sizes
        }
        return cls(
            model=model,
            eps=result.eps,
            delta=result.delta,
            sizes=sizes,
            bill_prompt=result.bill_prompt,
        )

    def rule_at(self, n: int) -> ExitRule:
        """The exit certified at size `n`; sizes the calibration did not certify have none."""
        if n not in self.sizes:
            known = ", ".join(map(str, sorted(self.sizes))) or "none"
            raise InputError(
                f"no certified exit at n = {n} (certified sizes: {known}); use the fixed cap",
                field="n",
            )
        return self.sizes[n]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": EXIT_SCHEMA,
            "kind": _KIND,
            "model": self.model,
            "eps": self.eps,
            "delta": self.delta,
            "bill_prompt": self.bill_prompt,
            "sizes": {str(n): rule.to_dict() for n, rule in sorted(self.sizes.items())},
        }

    @classmethod
    def from_dict(cls, data: object, source: str = "exit plan") -> ExitPlan:
        if not isinstance(data, Mapping):
            raise InputError("must be a JSON object", source=source)
        missing = sorted(_KEYS - set(data))
        if missing:
            raise InputError(f"missing key(s) {', '.join(missing)}", source=source)
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)}", source=source)
        if data["kind"] != _KIND or data["schema"] != EXIT_SCHEMA:
            raise InputError(
                f"must be a {_KIND!r} file of schema {EXIT_SCHEMA}, got kind "
                f"{data['kind']!r}, schema {data['schema']!r}",
                field="schema",
                source=source,
            )
        for name in ("eps", "delta"):
            value = data[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
                raise InputError(f"must be in (0, 1), got {value!r}", field=name, source=source)
        if not isinstance(data["model"], str) or not isinstance(data["bill_prompt"], bool):
            raise InputError("`model` must be text and `bill_prompt` true or false", source=source)
        if not isinstance(data["sizes"], Mapping):
            raise InputError("must be an object of sizes", field="sizes", source=source)
        sizes: dict[int, ExitRule] = {}
        for key, value in data["sizes"].items():
            where = f"sizes.{key}"
            if not str(key).isdigit():
                raise InputError("a size must be a whole number", field=where, source=source)
            try:
                sizes[int(key)] = ExitRule.from_dict(value, where)
            except InputError as exc:
                message = str(exc).split(": ", 1)[-1]
                raise InputError(message, field=exc.field, source=source) from exc
        return cls(
            model=data["model"],
            eps=float(data["eps"]),
            delta=float(data["delta"]),
            sizes=sizes,
            bill_prompt=data["bill_prompt"],
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        return write_text(path, json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "n": n,
                    "ceiling": r.ceiling,
                    "every": r.every,
                    "rule": r.rule.name,
                    "eps": self.eps,
                    "delta": self.delta,
                }
                for n, r in sorted(self.sizes.items())
            ]
        )


def load_exit_plan(path: str | os.PathLike[str]) -> ExitPlan:
    """Read an exit plan written by `ExitPlan.save`, every field checked."""
    # Nesting, size, UTF-8 and a key given twice checked as for any untrusted JSON file.
    return ExitPlan.from_dict(read_json(path), str(path))


def answer_with_exit(
    backend: Backend,
    item: TaskItem,
    plan: ExitPlan,
    *,
    n: int | None = None,
    protocol: str = "auto",
    answer_tokens: int = 16,
) -> ProbedAnswer:
    """Answer `item` under the plan's certified exit at its size (`n`, default the item's
    own); see the module docstring for backends that cannot be probed."""
    if not isinstance(plan, ExitPlan):
        raise InputError(f"must be an ExitPlan, got {type(plan).__name__}", field="plan")
    size = item_size(item, counter=backend.count_tokens) if n is None else n
    return probe_answer(
        backend,
        item,
        plan.rule_at(size),
        protocol=protocol,
        answer_tokens=answer_tokens,
        bill_prompt=plan.bill_prompt,
    )


def exit_from_calibration(
    frame: pd.DataFrame,
    ceilings: Mapping[int, int],
    eps: float,
    *,
    delta: float,
    model: str,
    every: int = DEFAULT_PROBE_EVERY,
    family: Family = "auto",
) -> tuple[ExitPlan | None, str]:
    """Certify an early exit on the calibration `frame` under `ceilings` (a plan's certified
    caps) and keep its deployable part; (None, why) where this calibration cannot certify one.
    `family` is the chain of rules tested (`certify_early_exit`). Only the frame's own
    shortcomings are a reason: other bad input still raises."""
    usable = {n: k for n, k in ceilings.items() if k >= 1}
    if not usable:
        return None, "no calibrated size has a certified cap to serve as the exit's ceiling"
    try:
        result = certify_early_exit(
            frame, eps, delta=delta, ceilings=usable, every=every, family=family
        )
        return ExitPlan.from_early_exit(result, model=model, every=every, frame=frame), ""
    except InputError as exc:
        if exc.field != "frame":
            raise
        return None, str(exc).split(": ", 1)[-1]


def exit_plan_for(
    path: str | os.PathLike[str] | None,
    plan_path: str | os.PathLike[str],
    *,
    eps: float,
    model: str,
) -> ExitPlan:
    """The exit plan at `path` (default: exit.json beside `plan_path`), checked against the
    plan it runs under: the same ε and, where both record one, the same model."""
    where = Path(plan_path).parent / "exit.json" if path is None else Path(path)
    if not where.is_file():
        raise InputError(
            f"no exit plan at {where}: write one with `cotplan plan --exit certified`",
            field="exit_plan",
        )
    plan = load_exit_plan(where)
    if not math.isclose(plan.eps, eps):
        raise InputError(
            f"certified for ε = {plan.eps:g}, not the plan's {eps:g}: plan again with "
            f"`cotplan plan --eps {eps:g} --exit certified`",
            field="eps",
            source=str(where),
        )
    if plan.model and model and plan.model != model:
        raise InputError(
            f"certified for model {plan.model}, not the plan's {model}",
            field="model",
            source=str(where),
        )
    return plan
