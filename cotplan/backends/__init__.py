"""How cotplan talks to models: one interface, one OpenAI-compatible client, the embedded engine.

Where things are: the contract a backend declares (`base`), where a token budget becomes
request fields (`budgets`), the client (`openai_compat`), the embedded model (`local`), specs
to backends through a registry of providers (`connect`), the call cache (`cache`).
"""

from cotplan.backends.base import (
    Backend,
    CallStats,
    Completion,
    NextTokenProbs,
    TokenLogprob,
    Usage,
)
from cotplan.backends.cache import CallCache
from cotplan.backends.connect import connect, providers, register_provider
from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.backends.models import list_models, locate, pull
from cotplan.backends.openai_compat import OpenAICompatibleBackend

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
