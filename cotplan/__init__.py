"""cotplan: plan chain-of-thought token budgets, and measure what reasoning is worth."""

from cotplan.backends import (
    Backend,
    CallCache,
    Completion,
    LocalModel,
    NextTokenProbs,
    OpenAICompatibleBackend,
    Usage,
    connect,
)
from cotplan.errors import CotplanError
from cotplan.tokens import count_tokens

__all__ = [
    "Backend",
    "CallCache",
    "Completion",
    "CotplanError",
    "LocalModel",
    "NextTokenProbs",
    "OpenAICompatibleBackend",
    "Usage",
    "connect",
    "count_tokens",
]
__version__ = "0.1.0"
