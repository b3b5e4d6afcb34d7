"""A loopback server that implements Gemini's documented Batch Mode over a real model server.

Endpoints (ai.google.dev/gemini-api/docs/batch-mode and the API reference of ``batches``, read
2026-12-05), as the `google-genai` SDK calls them for the Gemini Developer API:
``POST /v1beta/models/{model}:batchGenerateContent`` (``{"batch": {"displayName",
"inputConfig": {"requests": {"requests": [{"request", "metadata"}]}}}}``; the answer is the
batch's long-running operation, ``{"name": "batches/N", "metadata": {"state", ...}}``),
``GET /v1beta/batches/N`` (``metadata.state`` ``BATCH_STATE_PENDING`` / ``_RUNNING`` /
``_SUCCEEDED``; once done ``metadata.output.inlinedResponses.inlinedResponses``, one per request
in order, ``{"response", "metadata"}`` or ``{"error", "metadata"}``) and ``GET /v1beta/batches``
(``{"operations": [...]}``, newest first). A live chat request for a ``gemini`` model at
``/v1beta/openai/chat/completions`` (Gemini's OpenAI-compatible endpoint) is answered too.

Every GenerateContent request runs on `upstream` (the embedded llama.cpp server) through one
function, `_run`, whether it came in a batch or live: ``thinkingConfig.thinkingBudget`` becomes
llama.cpp's per-request ``thinking_budget_tokens`` (a ``thinkingLevel``, or none, leaves the
thinking to ``maxOutputTokens``), ``maxOutputTokens`` its ``max_tokens``, ``systemInstruction`` a
system message, the ``model`` role ``assistant``, ``stopSequences`` ``stop``. The answer is a
GenerateContentResponse: the reasoning as a part with ``thought: true``, the text as another,
``MAX_TOKENS`` for a cut, ``usageMetadata`` with the thoughts counted apart (the upstream's own
tokenizer counts them). The live endpoint answers with the same response in chat form
(`cotplan.planner.batch_gemini.chat_body`), without the thought text, as Gemini's compatible
endpoint does unless asked. Sampling is greedy unless a request says otherwise.

For tests: `submitted` counts every custom_id (the request's ``metadata``) each time a batch
holding it is created; `generate_requests` keeps each request by custom_id; `hold()` keeps
batches from running until `release()`; `fail` names custom_ids to fail on their first batch.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx

_BATCH_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch"


def _camel(value: Any) -> Any:
    """A request with every field name in lowerCamelCase: the API reads JSON as protobuf does,
    either spelling (the SDK sends a dict config's inner fields, such as
    ``thinkingConfig.thinking_budget``, as they were given)."""
    if isinstance(value, dict):
        return {
            (k.split("_")[0] + "".join(w.title() for w in k.split("_")[1:])): _camel(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _text(content: Any) -> str:
    parts = content.get("parts", []) if isinstance(content, dict) else []
    return "".join(str(p.get("text", "")) for p in parts)


class GeminiBatchServer:
    def __init__(self, upstream: str, *, fail: Callable[[str], bool] | None = None) -> None:
        parts = urlsplit(upstream)
        self.upstream = f"{parts.scheme}://{parts.netloc}"
        self.fail = fail or (lambda custom_id: False)
        self.operations: dict[str, dict[str, Any]] = {}
        self.submitted: Counter[str] = Counter()
        self.generate_requests: dict[str, dict[str, Any]] = {}
        self.failed_once: set[str] = set()
        self.creates = 0
        self.live_requests = 0
        self.crashes: list[str] = []
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self._gate = threading.Event()
        self._gate.set()
        self._server: ThreadingHTTPServer | None = None
        self._client = httpx.Client(timeout=600.0)

    @property
    def root(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint's URL, as a user gives it for a Gemini model."""
        return f"{self.root}/v1beta/openai/"

    def hold(self) -> None:
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    # -- one GenerateContent request -------------------------------------------------------------

    def _run(
        self, model: str, messages: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        cap = int(config.get("maxOutputTokens", 1024))
        thinking = config.get("thinkingConfig") or {}
        budget = int(thinking.get("thinkingBudget", cap))
        body: dict[str, Any] = {
            "messages": messages,
            "max_tokens": cap,
            "thinking_budget_tokens": min(budget, cap) if budget >= 0 else cap,
            "temperature": config.get("temperature", 0.0),
        }
        if config.get("stopSequences"):
            body["stop"] = config["stopSequences"]
        if "seed" in config:
            body["seed"] = config["seed"]
        reply = self._client.post(self.upstream + "/v1/chat/completions", json=body)
        reply.raise_for_status()
        answer = reply.json()
        choice = answer["choices"][0]
        thought = choice["message"].get("reasoning_content") or ""
        thoughts = 0
        if thought:
            counted = self._client.post(self.upstream + "/tokenize", json={"content": thought})
            thoughts = len(counted.json()["tokens"])
        usage = answer.get("usage") or {}
        completion = int(usage.get("completion_tokens", 0))
        prompt = int(usage.get("prompt_tokens", 0))
        parts: list[dict[str, Any]] = []
        if thought:
            parts.append({"text": thought, "thought": True})
        if choice["message"].get("content"):
            parts.append({"text": choice["message"]["content"]})
        candidates = max(completion - thoughts, 0)
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": "MAX_TOKENS" if choice["finish_reason"] == "length" else "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": candidates,
                "thoughtsTokenCount": thoughts,
                "totalTokenCount": prompt + candidates + thoughts,
            },
            "modelVersion": model,
            "responseId": f"resp-{next(self._ids)}",
        }

    def run_generate(self, model: str, request: dict[str, Any]) -> dict[str, Any]:
        """A GenerateContentRequest (REST field names) on the upstream model."""
        messages: list[dict[str, Any]] = []
        if request.get("systemInstruction"):
            messages.append({"role": "system", "content": _text(request["systemInstruction"])})
        for content in request.get("contents", []):
            role = "assistant" if content.get("role") == "model" else "user"
            messages.append({"role": role, "content": _text(content)})
        return self._run(model, messages, dict(request.get("generationConfig") or {}))

    def live_chat(self, chat: dict[str, Any]) -> dict[str, Any]:
        """A live chat request for a Gemini model, as the OpenAI-compatible endpoint answers."""
        from google.genai import types

        from cotplan.planner.batch_gemini import chat_body

        thinking = chat.get("thinking_config") or {}
        config: dict[str, Any] = {"maxOutputTokens": chat["max_tokens"]}
        if "thinking_budget" in thinking:
            config["thinkingConfig"] = {"thinkingBudget": thinking["thinking_budget"]}
        for name, field in (("temperature", "temperature"), ("stop", "stopSequences")):
            if name in chat:
                config[field] = chat[name]
        if "seed" in chat:
            config["seed"] = chat["seed"]
        rest = self._run(chat["model"], list(chat["messages"]), config)
        response = types.GenerateContentResponse.model_validate(rest)
        body = chat_body(response.model_dump(mode="json", exclude_none=True))
        body["choices"][0]["message"].pop("reasoning_content", None)
        return body

    # -- Batch Mode ------------------------------------------------------------------------------

    def create(self, model: str, request: dict[str, Any]) -> dict[str, Any]:
        batch = request["batch"]
        requests = [
            {"request": _camel(r["request"]), "metadata": r.get("metadata") or {}}
            for r in batch["inputConfig"]["requests"]["requests"]
        ]
        name = f"batches/{next(self._ids)}"
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        operation: dict[str, Any] = {
            "name": name,
            "metadata": {
                "@type": _BATCH_TYPE,
                "name": name,
                "model": f"models/{model}",
                "displayName": batch.get("displayName", ""),
                "state": "BATCH_STATE_PENDING",
                "createTime": now,
                "updateTime": now,
                "batchStats": {"requestCount": str(len(requests))},
            },
            "done": False,
        }
        with self._lock:
            self.creates += 1
            self.operations[name] = operation
            for r in requests:
                custom_id = r["metadata"]["custom_id"]
                self.submitted[custom_id] += 1
                self.generate_requests[custom_id] = r["request"]
        run = threading.Thread(target=self._execute, args=(operation, model, requests), daemon=True)
        run.start()
        return operation

    def _execute(self, operation: dict[str, Any], model: str, requests: list[Any]) -> None:
        results: list[dict[str, Any]] = []
        metadata = operation["metadata"]
        try:
            self._gate.wait()
            metadata["state"] = "BATCH_STATE_RUNNING"
            for r in requests:
                custom_id = r["metadata"]["custom_id"]
                with self._lock:
                    failing = self.fail(custom_id) and custom_id not in self.failed_once
                    if failing:
                        self.failed_once.add(custom_id)
                if failing:
                    error = {"code": 500, "message": "injected", "details": []}
                    results.append({"error": error, "metadata": r["metadata"]})
                else:
                    response = self.run_generate(model, r["request"])
                    results.append({"response": response, "metadata": r["metadata"]})
        except Exception as exc:  # a broken run must end the batch, not leave it polled forever
            self.crashes.append(repr(exc))
        with self._lock:
            metadata["output"] = {"inlinedResponses": {"inlinedResponses": results}}
            metadata["endTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            metadata["state"] = "BATCH_STATE_SUCCEEDED"
            operation["done"] = True

    # -- the HTTP server -------------------------------------------------------------------------

    def start(self) -> GeminiBatchServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                if path == "/v1beta/batches":
                    with owner._lock:
                        listed = list(reversed(owner.operations.values()))
                    self._reply(200, {"operations": listed})
                elif path.startswith("/v1beta/batches/"):
                    operation = owner.operations.get(path.removeprefix("/v1beta/"))
                    if operation is None:
                        self._reply(404, {"error": {"code": 404, "message": "no such batch"}})
                    else:
                        self._reply(200, operation)
                else:
                    self._reply(404, {"error": {"code": 404, "message": f"no route {path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = urlsplit(self.path).path
                if path.startswith("/v1beta/models/") and path.endswith(":batchGenerateContent"):
                    model = path.removeprefix("/v1beta/models/").split(":")[0]
                    self._reply(200, owner.create(model, body))
                elif path == "/v1beta/openai/chat/completions":
                    with owner._lock:
                        owner.live_requests += 1
                    self._reply(200, owner.live_chat(body))
                else:
                    self._reply(404, {"error": {"code": 404, "message": f"no route {path}"}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self._client.close()

    def __enter__(self) -> GeminiBatchServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
