"""How many requests a self-hosted endpoint says it runs at once: the live calibration's
default concurrency against it (`cotplan calibrate --concurrency`, when not given).

A self-hosted engine wants many requests in flight, not the client's few. Where the server
says how many it takes, that is the default: llama.cpp's ``GET /props`` answers
``total_slots`` (its ``--parallel``; ggml-org/llama.cpp tools/server/README.md, read
2026-12-05). vLLM and SGLang expose no such number over HTTP (vLLM's ``--max-num-seqs`` is a
launch flag): there, for hosted APIs, and for the embedded model (whose default already
counts its replicas and slots), the backend's own default stays, and ``--concurrency N``
sets it.
"""

from __future__ import annotations

from cotplan.backends.base import Backend
from cotplan.errors import InputError
from cotplan.io import parse_json

__all__ = ["MAX_SERVER_CONCURRENCY", "server_concurrency"]

#: A server that claims more slots than this is not believed (a typo or a broken answer).
MAX_SERVER_CONCURRENCY = 256
#: Hosted APIs: no slots to ask about, and no request to waste on them.
_HOSTED = ("api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com")


def server_concurrency(backend: Backend, *, timeout: float = 2.0) -> int | None:
    """The requests `backend`'s server says it runs at once (llama.cpp's ``total_slots``), or
    None where it says nothing (no base URL, a hosted API, no ``/props``, an answer that is
    not a whole number from 1 to `MAX_SERVER_CONCURRENCY`)."""
    import httpx2 as httpx

    from cotplan.backends.local import LocalBackend

    if isinstance(backend, LocalBackend):
        return None  # cotplan started that server: its default already counts its slots
    base = getattr(backend, "base_url", None)
    if not isinstance(base, str) or not base or any(h in base for h in _HOSTED):
        return None
    root = base.rstrip("/").removesuffix("/v1")
    try:
        reply = httpx.get(root + "/props", timeout=timeout)
    except httpx.HTTPError:
        return None
    if reply.status_code != 200:
        return None
    try:
        body = parse_json(reply.content, source=f"{root}/props")
    except InputError:
        return None
    slots = body.get("total_slots") if isinstance(body, dict) else None
    if isinstance(slots, bool) or not isinstance(slots, int):
        return None
    return slots if 1 <= slots <= MAX_SERVER_CONCURRENCY else None
