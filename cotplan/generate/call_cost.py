"""What a call already made cost, for the records that budgeted CoT and permutation averaging keep.

A completion names its model but not who billed it. Several providers sell some models under one
name (Claude at Anthropic and Google, OpenAI models at OpenAI and Azure), and the price table
rightly refuses to guess among them when asked for a quote. A record of a finished call is
priced at the model maker's list price instead: that is the provider a bare model name most
often means, and it keeps one ambiguous name from turning every recorded cost into "unknown".
"""

from __future__ import annotations

from cotplan.backends.base import Completion
from cotplan.errors import InputError
from cotplan.model_registry import family_of
from cotplan.pricing import CallCost, cost_of_completion

__all__ = ["recorded_cost"]


def recorded_cost(completion: Completion) -> CallCost:
    """The cost of `completion` at its maker's rates (zero when the call cache answered it).

    Raises the price table's `InputError` (an `UnknownModelError` for an unpriced model) as
    `cost_of_completion` does; callers turn that into a note.
    """
    family = family_of(completion.model)
    provider = None
    if family is not None and "/" not in completion.model:
        provider = family.vendor
    try:
        return cost_of_completion(completion, provider=provider)
    except InputError:
        if provider is None:
            raise
        # The maker does not sell it under this name (a reseller's own model id): ask the table
        # without the hint, so its own error or its single seller answers.
        return cost_of_completion(completion)
