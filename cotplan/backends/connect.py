"""`connect(spec)`: one call from a short model spec to a ready Backend."""

from __future__ import annotations

import contextlib
from typing import Any

from cotplan.backends.base import Backend
from cotplan.backends.local import CacheChoice, LocalBackend, LocalModel, resolve_cache
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import InputError

__all__ = ["connect"]

_PROVIDER_KEYS = {"openai": "OPENAI_API_KEY"}


class _OwningLocalBackend(LocalBackend):
    """A local backend that owns its server: closing the backend stops the server."""

    def close(self) -> None:
        with contextlib.suppress(Exception):
            super().close()
        self.server.stop()


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

    Remaining keyword options go to `LocalModel` (local) or `OpenAICompatibleBackend`.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("must be 'local', 'local:PATH', or 'openai:MODEL'", field="backend")
    provider, _, rest = spec.partition(":")
    if provider == "lab":
        from cotplan.lab.reasoning.backend import lab_backend  # lazy: imports torch

        return lab_backend(rest, **options)
    if provider == "local":
        timeout = float(options.pop("timeout", 300.0))
        server = LocalModel(rest or "smollm2-135m-instruct", **options).start()
        try:
            return _OwningLocalBackend(server, cache=resolve_cache(cache), timeout=timeout)
        except BaseException:
            server.stop()
            raise
    if provider in _PROVIDER_KEYS and rest:
        model = rest
    elif base_url is not None and not rest:
        model = spec
    else:
        raise InputError(
            f"unknown backend {spec!r}: use 'local', 'local:PATH', 'openai:MODEL', "
            "or a model name with --base-url",
            field="backend",
        )
    return OpenAICompatibleBackend(
        model,
        base_url=base_url,
        api_key=api_key,
        api_key_env=api_key_env or _PROVIDER_KEYS.get(provider, "OPENAI_API_KEY"),
        cache=resolve_cache(cache),
        **options,
    )
