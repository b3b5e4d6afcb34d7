"""A loopback server in vLLM's shape that scores prompts on a llama.cpp server that cannot.

vLLM answers a completions request carrying ``prompt_logprobs`` (and ``return_token_ids``) with
every prompt token's log-probability given the tokens before it: what `cotplan kstar study`
reads as B(k), the teacher-forced −ln P(gold answer | question, trace cut at k). llama.cpp's
server has no such field (it ignores it, and has no ``echo``), so the embedded models could not
take that path. `PromptScoringProxy` stands in front of a llama.cpp server on loopback:

- every request without ``prompt_logprobs`` is forwarded unchanged (generation stays the
  upstream's own);
- a completions request with ``prompt_logprobs`` is answered by teacher forcing on the
  upstream: the prompt is tokenized by the model's own tokenizer (``/tokenize``), and for each
  position j ≥ 1 one request ``/completion`` with the prompt's first j token ids, one token to
  predict and a logit bias that forces token j. llama.cpp reports a token's probability from
  the raw logits (before its sampler chain, where the bias acts), so the forced token's
  reported log-probability is the model's own P(token j | tokens < j), and its top
  alternatives are the model's. The forced and the unforced reading agree where the token is
  among the top alternatives (a test checks it on the embedded model).

Positions are cached by their token prefix, so prompts that share a prefix (one trace cut at
several budgets) score the shared part once. Each position costs one one-token decode on the
upstream (its prompt cache holds the prefix): about 20-40 ms on 2 cores, so this is for
small-scale tests of the logprob path, not for a study's full size (use vLLM there).

    with LocalModel("thinking-long") as model, PromptScoringProxy(model.base_url) as proxy:
        backend = connect("openai:smollm2-135m-thinking-long", base_url=proxy.base_url,
                          prompt_logprobs=True)
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2 as httpx

from cotplan.backends.local import require_loopback
from cotplan.errors import CotplanError, InputError, ResponseFormatError
from cotplan.io import parse_json

__all__ = ["PromptScoringProxy", "ScoringStats"]

#: Large enough that the forced token wins whatever the model prefers (logits are O(10)).
_FORCE = 1000.0
#: Cached positions kept at most; the cache starts over past this (a study's items share
#: prefixes only within an item, so nothing useful is lost).
_CACHE_LIMIT = 200_000


@dataclass
class ScoringStats:
    """What the proxy did: prompts scored, positions read from the upstream and from cache,
    and requests forwarded unchanged."""

    scored_prompts: int = 0
    positions_computed: int = 0
    positions_cached: int = 0
    forwarded: int = 0


class PromptScoringProxy:
    """A vLLM-shaped ``prompt_logprobs`` endpoint in front of a llama.cpp server `upstream`
    (its OpenAI base URL on loopback, ``http://127.0.0.1:PORT/v1``); see the module docstring."""

    def __init__(self, upstream: str, *, timeout: float = 600.0) -> None:
        require_loopback(upstream, field="upstream")
        self.upstream = upstream.rstrip("/")
        self.root = self.upstream.removesuffix("/v1")
        self.stats = ScoringStats()
        self._cache: dict[tuple[int, ...], dict[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=timeout)
        self._server: ThreadingHTTPServer | None = None

    # -- scoring --------------------------------------------------------------------------------

    def tokens(self, text: str) -> list[tuple[int, str]]:
        """`text`'s token ids and their pieces, by the upstream model's tokenizer (special
        tokens parsed as a completion request parses them; no BOS added)."""
        reply = self._client.post(
            f"{self.root}/tokenize",
            json={"content": text, "add_special": False, "with_pieces": True},
        )
        reply.raise_for_status()
        out = []
        for entry in reply.json()["tokens"]:
            piece = entry["piece"]
            # A piece that is part of a multi-byte character comes back as its bytes.
            text_piece = (
                piece if isinstance(piece, str) else bytes(piece).decode("utf-8", "replace")
            )
            out.append((int(entry["id"]), text_piece))
        return out

    def position(
        self, pieces: list[tuple[int, str]], j: int, top: int
    ) -> dict[str, dict[str, Any]]:
        """vLLM's entry for position j ≥ 1: {token id: {logprob, rank, decoded_token}} holding
        token j (forced, its own log-probability, its text the tokenizer's piece) and the
        model's `top` alternatives (their text as llama.cpp renders them)."""
        ids = [token_id for token_id, _ in pieces]
        key = (top, *ids[: j + 1])
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            self.stats.positions_cached += 1
            return cached
        body = {
            "prompt": ids[:j],
            "n_predict": 1,
            "n_probs": top,
            "temperature": 0.0,
            "logit_bias": [[ids[j], _FORCE]],
            "cache_prompt": True,
        }
        reply = self._client.post(f"{self.root}/completion", json=body)
        reply.raise_for_status()
        try:
            probs = reply.json()["completion_probabilities"][0]
            chosen, logprob = int(probs["id"]), float(probs["logprob"])
            alternatives = [
                (int(a["id"]), str(a["token"]), float(a["logprob"])) for a in probs["top_logprobs"]
            ]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ResponseFormatError(f"the upstream gave no token probabilities: {exc!r}") from exc
        if chosen != ids[j]:
            raise ResponseFormatError(
                f"the upstream did not take the forced token {ids[j]} at position {j} "
                f"(took {chosen})"
            )
        entry: dict[str, dict[str, Any]] = {}
        for rank, (token_id, text, value) in enumerate(alternatives, start=1):
            entry[str(token_id)] = {"logprob": value, "rank": rank, "decoded_token": text}
        # llama.cpp renders a special token's text as "" in its output; the prompt's own
        # token keeps the tokenizer's piece, so the texts add up to the prompt as vLLM's do.
        own = entry.get(str(chosen), {"logprob": logprob, "rank": None})
        # Outside the top list its rank is unknown here (vLLM gives the full rank; no reader of
        # this shape in cotplan uses it).
        entry[str(chosen)] = {**own, "logprob": logprob, "decoded_token": pieces[j][1]}
        with self._lock:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = entry
        self.stats.positions_computed += 1
        return entry

    def score(self, prompt: str, top: int) -> dict[str, Any]:
        """The completions reply vLLM gives for `prompt` with ``prompt_logprobs`` = `top`
        and ``return_token_ids``: one choice holding ``prompt_logprobs`` (None first) and
        ``prompt_token_ids``, and one greedy token as its text."""
        pieces = self.tokens(prompt)
        if not pieces:
            raise InputError("is empty after tokenization", field="prompt")
        ids = [token_id for token_id, _ in pieces]
        entries: list[dict[str, dict[str, Any]] | None] = [None]
        entries += [self.position(pieces, j, top) for j in range(1, len(ids))]
        reply = self._client.post(
            f"{self.root}/completion",
            json={"prompt": ids, "n_predict": 1, "temperature": 0.0, "cache_prompt": True},
        )
        reply.raise_for_status()
        self.stats.scored_prompts += 1
        return {
            "id": "cmpl-scored",
            "object": "text_completion",
            "model": "scored",
            "choices": [
                {
                    "index": 0,
                    "text": str(reply.json().get("content", "")),
                    "finish_reason": "length",
                    "logprobs": None,
                    "prompt_logprobs": entries,
                    "prompt_token_ids": ids,
                }
            ],
            "usage": {
                "prompt_tokens": len(ids),
                "completion_tokens": 1,
                "total_tokens": len(ids) + 1,
            },
        }

    # -- serving --------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _handle(self, path: str, raw: bytes) -> tuple[int, bytes, str]:
        body = parse_json(raw or b"{}", source="request body")
        top = body.get("prompt_logprobs") if isinstance(body, dict) else None
        if path.endswith("/completions") and not path.endswith("/chat/completions") and top:
            if not isinstance(top, int) or isinstance(top, bool) or top < 1:
                raise InputError(f"must be an integer >= 1, got {top!r}", field="prompt_logprobs")
            prompt = body.get("prompt")
            if not isinstance(prompt, str):
                raise InputError("must be one text prompt to score", field="prompt")
            return 200, json.dumps(self.score(prompt, top)).encode(), "application/json"
        self.stats.forwarded += 1
        reply = self._client.post(
            self.upstream + path.removeprefix("/v1"),
            content=raw,
            headers={"content-type": "application/json"},
        )
        kind = reply.headers.get("content-type", "application/json")
        return reply.status_code, reply.content, kind

    def start(self) -> PromptScoringProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body in two writes: without this, Nagle's algorithm and the client's
            # delayed ACK hold every reply about 40 ms.
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                reply = proxy._client.get(proxy.upstream + self.path.removeprefix("/v1"))
                self._send(reply.status_code, reply.content, "application/json")

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    status, data, kind = proxy._handle(self.path, raw)
                except InputError as exc:
                    status, kind = 400, "application/json"
                    data = json.dumps({"error": {"message": str(exc)}}).encode()
                except (CotplanError, httpx.HTTPError) as exc:
                    status, kind = 502, "application/json"
                    data = json.dumps({"error": {"message": str(exc)}}).encode()
                self._send(status, data, kind)

            def _send(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._client.close()

    def __enter__(self) -> PromptScoringProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
