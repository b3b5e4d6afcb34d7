"""How cotplan talks to models: one interface, one OpenAI-compatible client, the embedded engine.

Where things are: the contract a backend declares (`base`), where a token budget becomes
request fields (`budgets`), the client (`openai_compat`), the embedded model (`local`), specs
to backends through a registry of providers (`connect`), the call cache (`cache`).

The names are imported on first use, so that the embedded model's server process
(`cotplan.backends._serve`) and a command that needs one part (the call cache, say) do not
import the OpenAI client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cotplan._lazy import lazy_names

if TYPE_CHECKING:
    from cotplan.backends.base import (
        Backend,
        CallStats,
        Completion,
        NextTokenProbs,
        TokenLogprob,
        Usage,
    )
    from cotplan.backends.cache import CallCache
    from cotplan.backends.local import LocalBackend, LocalModel
    from cotplan.backends.models import list_models, locate, pull
    from cotplan.backends.openai_compat import OpenAICompatibleBackend
    from cotplan.backends.registry import connect, providers, register_provider

_PUBLIC = {  # name: the module that defines it, imported on first use
    "Backend": "cotplan.backends.base",
    "CallCache": "cotplan.backends.cache",
    "CallStats": "cotplan.backends.base",
    "Completion": "cotplan.backends.base",
    "LocalBackend": "cotplan.backends.local",
    "LocalModel": "cotplan.backends.local",
    "NextTokenProbs": "cotplan.backends.base",
    "OpenAICompatibleBackend": "cotplan.backends.openai_compat",
    "TokenLogprob": "cotplan.backends.base",
    "Usage": "cotplan.backends.base",
    "connect": "cotplan.backends.registry",
    "list_models": "cotplan.backends.models",
    "locate": "cotplan.backends.models",
    "providers": "cotplan.backends.registry",
    "pull": "cotplan.backends.models",
    "register_provider": "cotplan.backends.registry",
}

__all__ = [
    "Backend",
    "CallCache",
    "CallStats",
    "Completion",
    "LocalBackend",
    "LocalModel",
    "NextTokenProbs",
    "OpenAICompatibleBackend",
    "TokenLogprob",
    "Usage",
    "connect",
    "list_models",
    "locate",
    "providers",
    "pull",
    "register_provider",
]


__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, __all__)
