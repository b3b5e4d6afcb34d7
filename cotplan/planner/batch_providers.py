"""Submitting batch files and fetching their results: OpenAI's Batch API through the official
`openai` SDK, or an executor the user runs (vLLM's ``run-batch``).

OpenAI (platform.openai.com/docs/api-reference/batch, read 2026-12-05): the input file is
uploaded with ``client.files.create(purpose="batch")``, the batch created with
``client.batches.create(input_file_id=..., endpoint=..., completion_window="24h")``, polled with
``client.batches.retrieve``; when it is done its ``output_file_id`` (answers) and
``error_file_id`` (failed requests) are read with ``client.files.content``. One batch file holds
requests of one endpoint. Any server that implements these endpoints (a gateway, the loopback
server of the tests) is driven the same way, through `base_url`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import openai

from cotplan.backends.keys import scrub_secrets
from cotplan.backends.sdk_errors import translate_sdk_error
from cotplan.errors import InputError

__all__ = ["OpenAIBatches", "Poll"]


@dataclass(frozen=True)
class Poll:
    """One look at a batch: its status, request counts, and the result files once known."""

    status: str
    completed: int
    failed: int
    total: int
    output_file_id: str | None
    error_file_id: str | None


class OpenAIBatches:
    """OpenAI's Batch API (or any server that speaks it) through the `openai` SDK.

    `client` is an `openai.OpenAI`; `base_url`/`api_key` build one when it is not given.
    """

    kind = "openai"

    def __init__(
        self,
        client: openai.OpenAI | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
    ) -> None:
        if client is None:
            key = api_key or os.environ.get("OPENAI_API_KEY") or "no-key-needed"
            client = openai.OpenAI(
                api_key=key, base_url=base_url, max_retries=max_retries, timeout=timeout
            )
        self.client = client
        self.where = scrub_secrets(str(client.base_url), (client.api_key,))

    def _sdk(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except openai.OpenAIError as exc:
            raise translate_sdk_error(
                exc, where=self.where, attempts=1, secrets=(self.client.api_key,)
            ) from exc

    def upload(self, name: str, text: str) -> str:
        """Upload a batch input file; its file id."""
        created = self._sdk(
            self.client.files.create,
            file=(name, text.encode("utf-8"), "application/jsonl"),
            purpose="batch",
        )
        return str(created.id)

    def create(self, input_file_id: str, endpoint: str, token: str, *, text: str = "") -> str:
        """Create the batch over an uploaded file; its batch id. `token` (the run's) goes into
        the batch's metadata, so a rerun can find a batch whose id it never saw. (`text`, the
        file's, is for services with no upload.)"""
        batch = self._sdk(
            self.client.batches.create,
            input_file_id=input_file_id,
            endpoint=endpoint,
            completion_window="24h",
            metadata={"cotplan_run": token},
        )
        return str(batch.id)

    def find(self, input_file_id: str, *, text: str = "") -> str | None:
        """The batch already created over `input_file_id`, if any (after a kill between
        creating it and writing its id down)."""
        page = self._sdk(self.client.batches.list, limit=100)
        for batch in page:
            if getattr(batch, "input_file_id", None) == input_file_id:
                return str(batch.id)
        return None

    def poll(self, batch_id: str) -> Poll:
        batch = self._sdk(self.client.batches.retrieve, batch_id)
        counts = getattr(batch, "request_counts", None)
        return Poll(
            status=str(batch.status),
            completed=int(getattr(counts, "completed", 0) or 0),
            failed=int(getattr(counts, "failed", 0) or 0),
            total=int(getattr(counts, "total", 0) or 0),
            output_file_id=batch.output_file_id,
            error_file_id=batch.error_file_id,
        )

    def content(self, file_id: str) -> bytes:
        """A result file's bytes."""
        response = self._sdk(self.client.files.content, file_id)
        return bytes(response.read())


def check_endpoints(urls: Sequence[str]) -> str:
    """The one endpoint of a batch's requests (a batch file holds one)."""
    chosen = sorted(set(urls))
    if len(chosen) != 1:
        raise InputError(f"a batch holds requests of one endpoint, got {chosen}", field="requests")
    return chosen[0]
