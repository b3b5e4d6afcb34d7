"""Predictors named by a spec string: the exact references, a plugin's predictors, or a model.

The command line's `--backend` and `--p` options are read here, so notebooks and scripts name a
predictor the same way: ``exact_predictor("beta:2,3")``, ``open_predictor("local")``.

A spec is ``KIND[:ARGS]``. Each kind is a row in a registry (`register_predictor`): the exact
references (``laplace``, ``kt``, ``mle``, ``beta``, ``recency``, ``oracle``) are built in here;
other parts of cotplan, or another package, add theirs as plugins: an entry point in the group
``cotplan.predictors`` named for the kind, pointing at a module that calls `register_predictor`
when imported (cotplan's positional-encoding lab registers ``pe`` so). A spec whose kind is not
registered names a model backend, opened with `cotplan.connect`.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cotplan.errors import InputError
from cotplan.research.experiments.predictors import (
    BackendPredictor,
    BetaBernoulli,
    ClippedMLE,
    Oracle,
    Predictor,
    ProgressFn,
    Recency,
    kt,
    laplace,
)

__all__ = [
    "PREDICTOR_ENTRY_POINTS",
    "PROMPT_LOGPROBS_CHANGE_NOTHING",
    "PredictorKind",
    "PredictorRequest",
    "check_prompt_logprobs",
    "exact_predictor",
    "open_predictor",
    "predictor_kinds",
    "read_p",
    "register_predictor",
]

#: The entry-point group where plugins declare their predictor kinds.
PREDICTOR_ENTRY_POINTS = "cotplan.predictors"

StageFn = Callable[[str, int], ProgressFn | None]


@dataclass(frozen=True)
class PredictorRequest:
    """What a spec asked for: the spec split at its first colon, and how to report progress
    (`stage(name, total)` gives a progress callback for a long step such as training)."""

    spec: str
    kind: str
    args: str
    stage: StageFn | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PredictorKind:
    """A registered kind: `make(request)` returns the predictor; `usage` shows the spec;
    `exact` kinds run no model, so `exact_predictor` may build them to check a spec. A kind
    that `takes_args` no arguments names only its bare name (``laplace:x`` is not Laplace)."""

    name: str
    make: Callable[[PredictorRequest], Predictor]
    usage: str
    exact: bool = False
    takes_args: bool = True


_REGISTRY: dict[str, PredictorKind] = {}
_lock = threading.Lock()


def register_predictor(
    name: str,
    make: Callable[[PredictorRequest], Predictor],
    *,
    usage: str = "",
    exact: bool = False,
    takes_args: bool = True,
) -> None:
    """Make ``open_predictor("NAME[:ARGS]")`` call `make`; registering a name again replaces it."""
    if not name or ":" in name or name != name.lower():
        raise InputError(
            f"must be a non-empty lower-case name without ':', got {name!r}", field="name"
        )
    with _lock:
        _REGISTRY[name] = PredictorKind(name, make, usage or name, exact, takes_args)


def predictor_kinds() -> list[PredictorKind]:
    """Every registered kind, after loading every plugin's entry point."""
    for entry in importlib.metadata.entry_points(group=PREDICTOR_ENTRY_POINTS):
        _load_plugin(entry)
    with _lock:
        return list(_REGISTRY.values())


def _match(request: PredictorRequest) -> PredictorKind | None:
    """The kind a request names, or None when it names a model backend."""
    kind = _kind(request.kind)
    if kind is None or (request.args and not kind.takes_args):
        return None
    return kind


def _kind(name: str) -> PredictorKind | None:
    with _lock:
        found = _REGISTRY.get(name)
    if found is not None:
        return found
    for entry in importlib.metadata.entry_points(group=PREDICTOR_ENTRY_POINTS):
        if entry.name == name:
            _load_plugin(entry)
    with _lock:
        return _REGISTRY.get(name)


def _load_plugin(entry: importlib.metadata.EntryPoint) -> None:
    with _lock:
        if entry.name in _REGISTRY:
            return
    try:
        entry.load()
    except ImportError as exc:
        raise InputError(
            f"the predictor plugin {entry.name!r} ({entry.value}) cannot be imported: {exc}",
            field="backend",
        ) from exc


def _request(spec: str, stage: StageFn | None = None) -> PredictorRequest:
    kind, _, args = spec.strip().lower().partition(":")
    return PredictorRequest(spec=spec, kind=kind, args=args, stage=stage)


def exact_predictor(spec: str) -> Predictor | None:
    """The exact reference a spec names, or None when it names anything else (a model backend,
    or a plugin's predictor such as the lab's ``pe:``).

    'laplace', 'kt', 'mle[:EPS]', 'beta:A,B', 'recency[:DECAY]', 'oracle:P'.
    """
    request = _request(spec)
    kind = _match(request)
    if kind is None or not kind.exact:
        return None
    try:
        return kind.make(request)
    except ValueError as exc:
        raise InputError(f"cannot read {spec!r}: {exc}", field="backend") from exc


@contextlib.contextmanager
def open_predictor(
    spec: str,
    *,
    base_url: str | None = None,
    instruction: str = "",
    concurrency: int | None = None,
    connect_options: Mapping[str, Any] | None = None,
    stage: StageFn | None = None,
) -> Iterator[Predictor]:
    """The predictor `spec` names: a registered kind's (an exact reference, a plugin's), else a
    `BackendPredictor` on ``connect(spec, base_url=..., **connect_options)``.

    `stage` reports a plugin's long steps (the lab trains on first use). The connection closes
    when the block ends.
    """
    request = _request(spec, stage)
    kind = _match(request)
    if kind is not None:
        if kind.exact:
            predictor = exact_predictor(spec)
            assert predictor is not None
            yield predictor
        else:
            yield kind.make(request)
        return
    from cotplan.backends.registry import connect

    with connect(spec, base_url=base_url, **dict(connect_options or {})) as backend:
        yield BackendPredictor(backend, instruction=instruction, concurrency=concurrency)


#: Why prompt_logprobs leaves an experiment's requests as they are: it reads a sequence's
#: positions from one request, and these experiments have no sequence to read that way.
PROMPT_LOGPROBS_CHANGE_NOTHING = {
    "order": "order reads one position per ordering, one request each with or without it",
    "falck": "falck samples each path bit by bit, and each draw needs the one before it",
}


def check_prompt_logprobs(backend: str, base_url: str | None) -> None:
    """Refuse `prompt_logprobs` (`--prompt-logprobs`) except where a server can answer it: a
    model behind an OpenAI-compatible endpoint named by --base-url (``openai:MODEL`` or a bare
    model name), whose /v1/completions takes vLLM's ``prompt_logprobs`` field. Refused, before
    anything starts, for the exact references and lab models (no requests to save), the
    embedded llama.cpp server, OpenAI's own API and every other provider (none returns prompt
    scores).
    The server itself is not asked: one that ignores the field fails the first request."""
    from cotplan.backends.registry import providers

    provider, _, rest = backend.strip().partition(":")
    kind = provider.lower()
    if exact_predictor(backend) is not None:
        why = f"{backend!r} is an exact reference, which makes no model requests"
    elif kind in {k.name for k in predictor_kinds()}:
        why = f"{backend!r} is an in-process model, which makes no requests"
    elif kind == "local":
        why = "the embedded llama.cpp server does not return prompt_logprobs"
    elif kind in {p.name for p in providers()} and kind != "openai":
        why = f"{provider!r} backends do not return prompt_logprobs"
    elif base_url is None:
        why = (
            "without --base-url this is OpenAI's own API, which does not return prompt_logprobs"
            if kind == "openai"
            else f"{backend!r} names no endpoint (--base-url)"
        )
    elif kind == "openai" or not rest:
        return
    else:
        why = f"{provider!r} backends do not return prompt_logprobs"
    raise InputError(
        f"{why}; it needs a vLLM server: -b openai:MODEL --base-url URL",
        field="prompt_logprobs",
    )


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


def _mle(request: PredictorRequest) -> Predictor:
    return ClippedMLE(float(request.args)) if request.args else ClippedMLE()


def _beta(request: PredictorRequest) -> Predictor:
    a, b = (float(x) for x in request.args.split(","))
    return BetaBernoulli(a, b)


def _recency(request: PredictorRequest) -> Predictor:
    return Recency(float(request.args)) if request.args else Recency()


def _oracle(request: PredictorRequest) -> Predictor:
    return Oracle(float(request.args))


for _name, _make, _usage in (
    ("mle", _mle, "mle[:EPS]"),
    ("beta", _beta, "beta:A,B"),
    ("recency", _recency, "recency[:DECAY]"),
    ("oracle", _oracle, "oracle:P"),
):
    register_predictor(_name, _make, usage=_usage, exact=True)
register_predictor("laplace", lambda request: laplace(), exact=True, takes_args=False)
register_predictor("kt", lambda request: kt(), exact=True, takes_args=False)
