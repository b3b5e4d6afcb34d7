"""Which batch service a calibration in batches goes through, chosen from the backend.

`batch_service` refuses a backend that cannot be calibrated in batches (not an OpenAI-compatible
endpoint or the Responses API) and, when the requests are to be submitted, the embedded model
(it has no Batch API: its requests are written for an executor instead); otherwise it returns
the endpoint's batch API (`cotplan.planner.batch.service_for`: Anthropic's Message Batches
for a Claude model, Gemini's Batch Mode for a Gemini model, else OpenAI's Batch API), or None
for files an executor runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cotplan.errors import CapabilityError, InputError

if TYPE_CHECKING:
    from cotplan.backends.base import Backend
    from cotplan.planner.batch_rounds import BatchService

__all__ = ["batch_service"]


def batch_service(
    model: Backend, *, submit: bool, spec: str = "", base_url: str | None = None
) -> BatchService | None:
    """The Batch API `model`'s requests are submitted to (`submit`), or None when they are
    written to files for an executor; `spec` names the backend in the error."""
    from cotplan.backends.openai_compat import OpenAICompatibleBackend
    from cotplan.backends.responses import OpenAIResponsesBackend
    from cotplan.planner.batch import service_for

    if not isinstance(model, OpenAICompatibleBackend | OpenAIResponsesBackend):
        raise CapabilityError(f"{spec or model.model} cannot be calibrated in batches")
    if not submit:
        return None
    if getattr(model, "provider", None) == "llama.cpp" and base_url is None:
        raise InputError(
            "the embedded model has no batch API: use --batch-file to write the requests for "
            "an executor",
            field="batch",
        )
    return service_for(model)
