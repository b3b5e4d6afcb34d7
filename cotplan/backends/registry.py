"""`connect(spec)`: one call from a short model spec to a ready Backend.

A spec is ``PROVIDER:NAME`` (or a bare model name with `base_url`). Each provider is a factory
in a registry: ``local``, ``openai`` and ``openai-responses`` are built in here; other parts of
cotplan, or another package, add theirs as plugins: an entry point in the group
``cotplan.backends`` (``[project.entry-points."cotplan.backends"]`` in pyproject.toml), named
for the provider, pointing at its factory or at a module that calls `register_provider` when
imported. cotplan's lab is such a plugin (the ``lab`` entry in pyproject.toml), so this module
knows nothing of what plugins build; a user's own code may also call `register_provider` directly.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cotplan.backends.adapters import locate_adapter
from cotplan.backends.base import Backend
from cotplan.backends.budgets import rule_for_model
from cotplan.backends.known_models import PROTOCOL_NAMES
from cotplan.backends.local import CacheChoice, LocalBackend, LocalModel, resolve_cache
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.backends.responses import OpenAIResponsesBackend
from cotplan.errors import InputError

__all__ = [
    "ENTRY_POINT_GROUP",
    "ConnectRequest",
    "Provider",
    "check_spec",
    "connect",
    "providers",
    "register_provider",
    "serve_under",
]

#: The entry-point group where plugins declare their providers.
ENTRY_POINT_GROUP = "cotplan.backends"


@dataclass(frozen=True)
class ConnectRequest:
    """What `connect` was asked: the spec split at its first colon, and the options."""

    spec: str
    provider: str
    name: str
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    cache: CacheChoice = "default"
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Provider:
    """A registered provider: `factory(request)` returns the Backend; `usage` shows the spec."""

    name: str
    factory: Callable[[ConnectRequest], Backend]
    usage: str


_REGISTRY: dict[str, Provider] = {}
_lock = threading.Lock()


def register_provider(
    name: str, factory: Callable[[ConnectRequest], Backend], *, usage: str = ""
) -> None:
    """Make ``connect("NAME:...")`` call `factory`; registering a name again replaces it."""
    if not name or ":" in name:
        raise InputError(f"must be a non-empty name without ':', got {name!r}", field="name")
    with _lock:
        _REGISTRY[name] = Provider(name, factory, usage or f"{name}:NAME")


def providers() -> list[Provider]:
    """Every registered provider, after loading every plugin's entry point."""
    for entry in _entry_points():
        _load_plugin(entry)
    with _lock:
        return list(_REGISTRY.values())


def _entry_points(name: str | None = None) -> list[importlib.metadata.EntryPoint]:
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return [entry for entry in found if name is None or entry.name == name]


def _load_plugin(entry: importlib.metadata.EntryPoint) -> None:
    """Import a plugin: a module registers its providers itself; a factory is registered
    under the entry point's name (unless importing it registered that name already)."""
    with _lock:
        if entry.name in _REGISTRY:
            return
    try:
        loaded = entry.load()
    except ImportError as exc:
        raise InputError(
            f"the backend plugin {entry.name!r} ({entry.value}) cannot be imported: {exc}",
            field="backend",
        ) from exc
    with _lock:
        known = entry.name in _REGISTRY
    if not known and callable(loaded):
        register_provider(entry.name, loaded)


class _OwningLocalBackend(LocalBackend):
    """A local backend that owns its server: closing the backend stops the server."""

    def close(self) -> None:
        with contextlib.suppress(Exception):
            super().close()
        self.server.stop()


#: The rules the embedded llama.cpp server runs under: its plain output cap (cotplan cuts the
#: thinking at k and forces the answer in two phases: the default) or its own per-request
#: thinking cap (`thinking_budget_tokens`: one request), which needs a model served with
#: llama.cpp's reasoning parser.
_LOCAL_PROVIDERS = ("llama.cpp", "llama.cpp-thinking")


def _check_local_provider(model: str, provider: str) -> None:
    if provider not in _LOCAL_PROVIDERS:
        raise InputError(
            f"must be one of {', '.join(_LOCAL_PROVIDERS)} for the embedded model, got "
            f"{provider!r}",
            field="provider",
        )
    if provider == "llama.cpp-thinking" and not _reasoning_parsed(model):
        raise InputError(
            f"'llama.cpp-thinking' needs a model served with llama.cpp's reasoning parser (its "
            f"thinking returned as `reasoning_content`), such as 'local:thinking'; {model!r} "
            "is not: leave `provider` out and cotplan forces the answer in two phases",
            field="provider",
        )


def _reasoning_parsed(model: str) -> bool:
    """`model` is a shipped adapter served with a chat template that llama.cpp's reasoning
    parser recognises and the reasoning format on (`cotplan.backends.adapters`)."""
    shipped = locate_adapter(model)
    if shipped is None:
        return False
    spec = shipped[0]
    return bool(spec.chat_template) and spec.reasoning_format != "none"


def serve_under(backend: LocalBackend, provider: str) -> LocalBackend:
    """`backend` with its requests capped under `provider`'s rule: ``"llama.cpp"`` (the
    default: cotplan cuts the thinking at k and forces the answer) or ``"llama.cpp-thinking"``
    (the server's own `thinking_budget_tokens`: the cap and the answer in one chat request;
    budgeted CoT then runs in chat mode). What ``connect("local:thinking",
    provider="llama.cpp-thinking")`` does, for a backend of a server already running."""
    _check_local_provider(backend.server.model, provider)
    backend.provider = provider
    backend.budget_rule = rule_for_model(provider, backend.model).name
    return backend


def _local(request: ConnectRequest) -> Backend:
    options = dict(request.options)
    timeout = float(options.pop("timeout", 300.0))
    provider = options.pop("provider", "llama.cpp")
    name = request.name or "smollm2-135m-instruct"
    _check_local_provider(name, provider)  # before the server starts: a typo costs nothing
    server = LocalModel(name, **options).start()
    try:
        backend = _OwningLocalBackend(server, cache=resolve_cache(request.cache), timeout=timeout)
        return serve_under(backend, provider)
    except BaseException:
        server.stop()
        raise


def _openai(request: ConnectRequest) -> Backend:
    if not request.name:
        raise _unknown(request.spec)
    options = dict(request.options)
    api = options.pop("api", "chat")
    if api == "responses":
        return _responses(replace(request, options=options))
    if api != "chat":
        raise InputError(f"must be 'chat' or 'responses', got {api!r}", field="api")
    request = replace(request, options=options)
    return OpenAICompatibleBackend(request.name, **_client_options(request))


def _responses(request: ConnectRequest) -> Backend:
    if not request.name:
        raise _unknown(request.spec)
    return OpenAIResponsesBackend(request.name, **_client_options(request))


def _client_options(request: ConnectRequest) -> dict[str, Any]:
    """What both OpenAI clients (chat and Responses) are built from: endpoint, key, cache and
    the spec's own options."""
    return dict(
        base_url=request.base_url,
        api_key=request.api_key,
        api_key_env=request.api_key_env or "OPENAI_API_KEY",
        cache=resolve_cache(request.cache),
        **request.options,
    )


register_provider("local", _local, usage="local, local:PATH")
register_provider("openai", _openai, usage="openai:MODEL")
register_provider("openai-responses", _responses, usage="openai-responses:MODEL")


def check_spec(spec: str, base_url: str | None = None) -> None:
    """Refuse a spec whose provider `connect` would not know, without importing any plugin or
    building anything: the error lists the forms that are known."""
    provider, _, rest = spec.partition(":")
    with _lock:
        known = provider in _REGISTRY
    if known or any(entry.name == provider for entry in _entry_points()):
        return
    if base_url is None or rest:  # a bare model name goes to the OpenAI client with a URL
        raise _unknown(spec)


def _unknown(spec: str) -> InputError:
    with _lock:
        others = [p.usage for n, p in _REGISTRY.items() if n not in ("local", "openai")]
    others += [f"{entry.name}:..." for entry in _entry_points() if entry.name not in _REGISTRY]
    extra = f" ({', '.join(others)})" if others else ""
    return InputError(
        f"unknown backend {spec!r}: use 'local', 'local:PATH', 'openai:MODEL', "
        f"or a model name with --base-url{extra}",
        field="backend",
    )


def connect(
    spec: str = "local",
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    cache: CacheChoice = "default",
    **options: Any,
) -> Backend:
    """A Backend from a short spec.

    - ``"local"`` or ``"local:PATH_OR_NAME"``: start the embedded llama.cpp server (stopped by
      ``backend.close()`` or a ``with`` block). For the thinking model, served with
      llama.cpp's reasoning parser, ``provider="llama.cpp-thinking"`` caps the thinking on
      the server (`thinking_budget_tokens`, one chat request) instead of cotplan's two-phase
      budget forcing (the default; `serve_under`).
    - ``"openai:MODEL"``: OpenAI itself (key from ``OPENAI_API_KEY``), or any OpenAI-compatible
      endpoint when `base_url` is given (vLLM, llama.cpp, Ollama, Azure-style gateways); with
      ``api="responses"`` the same as ``"openai-responses:MODEL"``.
    - ``"openai-responses:MODEL"``: OpenAI's Responses API (`OpenAIResponsesBackend`:
      `reasoning.effort`, `max_output_tokens`, `incomplete_details`).
    - ``"MODEL"`` with `base_url`: the same as ``openai:MODEL``.
    - ``"lab:FAMILY"``: the lab reasoning model of a lab family (``lab:parity``, ``lab:sum``,
      ``lab:state``, ``lab:bits``), in-process; needs the `lab` extra, and trains the model on
      first use (options `preset`, `retrain`, `seed`; see `cotplan.research.lab.reasoning`).
    - ``"NAME:..."`` for any provider a plugin declares (entry points in the group
      ``cotplan.backends``) or code adds with `register_provider`.

    `protocol` (an option) names how the model writes and closes its thinking (``plain``,
    ``think``, ``qwen3``, ``harmony``, ``magistral``: `cotplan.generate.protocols`) when the
    model registry does not know the model by its name, e.g. an R1 distill served as
    ``my-team-model``. Remaining keyword options go to the provider's factory: `LocalModel`
    (local), `OpenAICompatibleBackend` (openai), `OpenAIResponsesBackend` (openai-responses).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("must be 'local', 'local:PATH', or 'openai:MODEL'", field="backend")
    protocol = options.pop("protocol", None)
    if protocol is not None and protocol not in PROTOCOL_NAMES:
        raise InputError(
            f"must be one of {', '.join(PROTOCOL_NAMES)}, got {protocol!r}", field="protocol"
        )
    provider, _, rest = spec.partition(":")
    request = ConnectRequest(spec, provider, rest, base_url, api_key, api_key_env, cache, options)
    backend = _build(request, base_url, rest)
    if protocol is not None:
        backend.protocol = protocol
    return backend


def _build(request: ConnectRequest, base_url: str | None, rest: str) -> Backend:
    spec, provider = request.spec, request.provider
    with _lock:
        chosen = _REGISTRY.get(provider)
    if chosen is None:
        for entry in _entry_points(provider):
            _load_plugin(entry)
        with _lock:
            chosen = _REGISTRY.get(provider)
    if chosen is not None:
        return chosen.factory(request)
    if base_url is not None and not rest:
        return _openai(replace(request, provider="openai", name=spec))
    raise _unknown(spec)
