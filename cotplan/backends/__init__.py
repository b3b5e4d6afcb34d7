"""How cotplan talks to models: one interface, one OpenAI-compatible client, the embedded engine."""

from cotplan.backends.base import Backend, Completion, NextTokenProbs, TokenLogprob, Usage
from cotplan.backends.cache import CallCache
from cotplan.backends.connect import connect
from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.backends.models import list_models, locate, pull
from cotplan.backends.openai_compat import CallStats, OpenAICompatibleBackend

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
    "pull",
]
