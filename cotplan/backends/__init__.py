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

from cotplan._lazy import lazy_face

# The public names, each written once: imported here for type checkers and editors, and read
# from these lines by `lazy_face` to import on first use at run time.
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

__getattr__, __dir__, __all__ = lazy_face(__name__, __file__)
