"""Predictors named by a spec string: the exact references, or a model backend to score.

The command line's `--backend` and `--p` options are read here, so notebooks and scripts name a
predictor the same way: ``exact_predictor("beta:2,3")``, ``open_predictor("local")``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from cotplan.errors import InputError
from cotplan.experiments.predictors import (
    BackendPredictor,
    BetaBernoulli,
    ClippedMLE,
    Oracle,
    Predictor,
    Recency,
    kt,
    laplace,
)

__all__ = ["exact_predictor", "open_predictor", "read_p"]


def exact_predictor(spec: str) -> Predictor | None:
    """The exact reference a spec names, or None when it names a model backend.

    'laplace', 'kt', 'mle[:EPS]', 'beta:A,B', 'recency[:DECAY]', 'oracle:P'.
    """
    name, _, arg = spec.strip().lower().partition(":")
    try:
        if name == "laplace" and not arg:
            return laplace()
        if name == "kt" and not arg:
            return kt()
        if name == "mle":
            return ClippedMLE(float(arg)) if arg else ClippedMLE()
        if name == "beta":
            a, b = (float(x) for x in arg.split(","))
            return BetaBernoulli(a, b)
        if name == "recency":
            return Recency(float(arg)) if arg else Recency()
        if name == "oracle":
            return Oracle(float(arg))
    except ValueError as exc:
        raise InputError(f"cannot read {spec!r}: {exc}", field="backend") from exc
    return None


@contextlib.contextmanager
def open_predictor(
    spec: str,
    *,
    base_url: str | None = None,
    instruction: str = "",
    concurrency: int | None = None,
) -> Iterator[Predictor]:
    """The exact reference `spec` names, else a `BackendPredictor` on `connect(spec)`.

    The connection closes when the block ends.
    """
    exact = exact_predictor(spec)
    if exact is not None:
        yield exact
        return
    from cotplan.backends.connect import connect

    with connect(spec, base_url=base_url) as backend:
        yield BackendPredictor(backend, instruction=instruction, concurrency=concurrency)


def read_p(text: str) -> float | None:
    """A Bernoulli p in (0, 1), or None for 'prior' (p drawn per sequence from Beta(1, 1))."""
    if text.strip().lower() == "prior":
        return None
    try:
        value = float(text)
    except ValueError as exc:
        raise InputError(f"must be a number in (0, 1) or 'prior', got {text!r}", field="p") from exc
    if not 0.0 < value < 1.0:
        raise InputError(f"must be a number in (0, 1) or 'prior', got {text!r}", field="p")
    return value
