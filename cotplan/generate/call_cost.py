"""What a call already made cost, for the records that budgeted CoT and permutation averaging keep.

A completion names its model but not who billed it. Several providers sell some models under one
name (Claude at Anthropic and Google, OpenAI models at OpenAI and Azure); the price table prices
such a name at its maker's list price, with a note naming the other sellers
(`cotplan.pricing.makers`), so a record of a finished call needs no seller of its own.
"""

from __future__ import annotations

from cotplan.backends.base import Completion
from cotplan.pricing import CallCost, cost_of_completion

__all__ = ["recorded_cost"]


def recorded_cost(completion: Completion) -> CallCost:
    """The cost of `completion` at its maker's rates (zero when the call cache answered it).

    Raises the price table's `InputError` (an `UnknownModelError` for an unpriced model, or a
    name none of whose sellers cotplan knows as its maker) as `cost_of_completion` does;
    callers turn that into a note.
    """
    return cost_of_completion(completion)
