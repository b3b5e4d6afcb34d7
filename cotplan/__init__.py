"""cotplan: plan chain-of-thought token budgets, and measure what reasoning is worth."""

from cotplan.errors import CotplanError

__all__ = ["CotplanError"]
__version__ = "0.1.0"
