"""`connect(spec)`: one call from a short model spec to a ready Backend.

A spec is ``PROVIDER:NAME`` (or a bare model name with `base_url`). Each provider is a factory
in a registry: ``local`` and ``openai`` are built in here; other parts of cotplan, or a user's
own code, add theirs with `register_provider` (the lab registers ``lab`` in `cotplan.lab`),
so this module knows nothing of what they build.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cotplan.backends.base import Backend
from cotplan.backends.local import CacheChoice, LocalBackend, LocalModel, resolve_cache
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import InputError
from cotplan.model_registry import PROTOCOL_NAMES

__all__ = ["ConnectRequest", "Provider", "connect", "providers", "register_provider"]

#: Packages of cotplan that register providers of their own, imported the first time a spec
#: names a provider not registered yet (the way plugins are discovered, without this module
#: importing what they build).
_PLUGIN_PACKAGES = ("cotplan.lab",)


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
_plugins_loaded = False


def register_provider(
    name: str, factory: Callable[[ConnectRequest], Backend], *, usage: str = ""
) -> None:
    """Make ``connect("NAME:...")`` call `factory`; registering a name again replaces it."""
    if not name or ":" in name:
        raise InputError(f"must be a non-empty name without ':', got {name!r}", field="name")
    with _lock:
        _REGISTRY[name] = Provider(name, factory, usage or f"{name}:NAME")


def providers() -> list[Provider]:
    """Every registered provider (after loading cotplan's own plugins)."""
    _load_plugins()
    with _lock:
        return list(_REGISTRY.values())


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    for package in _PLUGIN_PACKAGES:
        importlib.import_module(package)
    _plugins_loaded = True


class _OwningLocalBackend(LocalBackend):
    """A local backend that owns its server: closing the backend stops the server."""

    def close(self) -> None:
        with contextlib.suppress(Exception):
            super().close()
        self.server.stop()


def _local(request: ConnectRequest) -> Backend:
    options = dict(request.options)
    timeout = float(options.pop("timeout", 300.0))
    server = LocalModel(request.name or "smollm2-135m-instruct", **options).start()
    try:
        return _OwningLocalBackend(server, cache=resolve_cache(request.cache), timeout=timeout)
    except BaseException:
        server.stop()
        raise


def _openai(request: ConnectRequest) -> Backend:
    if not request.name:
        raise _unknown(request.spec)
    return OpenAICompatibleBackend(
        request.name,
        base_url=request.base_url,
        api_key=request.api_key,
        api_key_env=request.api_key_env or "OPENAI_API_KEY",
        cache=resolve_cache(request.cache),
        **request.options,
    )


register_provider("local", _local, usage="local, local:PATH")
register_provider("openai", _openai, usage="openai:MODEL")


def _unknown(spec: str) -> InputError:
    with _lock:
        others = [p.usage for n, p in _REGISTRY.items() if n not in ("local", "openai")]
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
      ``backend.close()`` or a ``with`` block).
    - ``"openai:MODEL"``: OpenAI itself (key from ``OPENAI_API_KEY``), or any OpenAI-compatible
      endpoint when `base_url` is given (vLLM, llama.cpp, Ollama, Azure-style gateways).
    - ``"MODEL"`` with `base_url`: the same as ``openai:MODEL``.
    - ``"lab:FAMILY"``: the lab reasoning model of a lab family (``lab:parity``, ``lab:sum``,
      ``lab:state``, ``lab:bits``), in-process; needs the `lab` extra, and trains the model on
      first use (options `preset`, `retrain`; see `cotplan.lab.reasoning`).
    - ``"NAME:..."`` for any provider added with `register_provider`.

    `protocol` (an option) names how the model writes and closes its thinking (``plain``,
    ``think``, ``qwen3``: `cotplan.generate.protocols`) when the model registry does not know
    the model by its name, e.g. an R1 distill served as ``my-team-model``. Remaining keyword
    options go to the provider's factory: `LocalModel` (local), `OpenAICompatibleBackend`
    (openai).
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
        _load_plugins()
        with _lock:
            chosen = _REGISTRY.get(provider)
    if chosen is not None:
        return chosen.factory(request)
    if base_url is not None and not rest:
        return _openai(replace(request, provider="openai", name=spec))
    raise _unknown(spec)
