"""A loopback server that implements OpenAI's documented Batch API over a real model server.

Endpoints (platform.openai.com/docs/api-reference/batch and /files, read 2026-12-05):
``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``, ``GET /v1/batches``,
``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``; and ``POST /v1/chat/completions`` and
``/v1/completions`` forwarded as they are, for requests a client sends live. A batch runs its
lines one after another against `upstream` (the embedded llama.cpp server) in a thread, and
writes the output file (answers) and the error file (failed requests) in the documented line
format.

Anthropic's Message Batches too (platform.claude.com/docs/en/api/messages/batches, read
2026-12-05): ``POST /v1/messages/batches`` (``{"requests": [{"custom_id", "params"}]}``),
``GET /v1/messages/batches`` (list), ``GET /v1/messages/batches/{id}`` (``processing_status``,
``request_counts``, ``results_url`` once ended) and ``GET /v1/messages/batches/{id}/results``
(JSONL ``{"custom_id", "result": {"type": "succeeded", "message"}}`` or ``errored``). Each
Messages request runs on the same upstream (`run_message`): the thinking budget
(``thinking.budget_tokens``) becomes llama.cpp's per-request ``thinking_budget_tokens``,
adaptive thinking's is its ``max_tokens`` (the effort is not modelled), thinking disabled is
a budget of 0, ``system`` a system message, ``stop_sequences`` ``stop``;
the reply's reasoning is a ``thinking`` block, its text a ``text`` block, its usage
``input_tokens``/``output_tokens``. A live chat request for a ``claude`` model (what Anthropic's
OpenAI-compatible endpoint takes) runs through the same `run_message` and comes back in chat
form with the text only, as that endpoint answers. Sampling is greedy unless a request says
otherwise, so a live run and a batch give the same answers. `anthropic_params` keeps each
Messages request by custom_id.

The Responses API (``/v1/responses``, live and as batch lines) runs on the same upstream
(`run_response`): ``input`` as the messages, ``max_output_tokens`` as the cap over thinking
and answer (the effort is not modelled); the answer comes back as a ``message`` item, the
thinking hidden and counted in ``usage.output_tokens_details.reasoning_tokens`` (the upstream's
own tokenizer counts it), a cut as ``status: "incomplete"``.

For tests: `submitted` counts every custom_id each time a batch holding it is created (the
"zero requests submitted twice" count); `hold()` keeps batches from running until `release()`;
`fail` names custom_ids to fail on their first batch (a partly failed batch); `strip_usage`
names custom_ids whose answer comes back without `usage`.
"""

from __future__ import annotations

import email.parser
import email.policy
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


class BatchServer:
    def __init__(
        self,
        upstream: str,
        *,
        fail: Callable[[str], bool] | None = None,
        strip_usage: Callable[[str], bool] | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        self.upstream = f"{parts.scheme}://{parts.netloc}"
        self.fail = fail or (lambda custom_id: False)
        self.strip_usage = strip_usage or (lambda custom_id: False)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted: Counter[str] = Counter()
        self.failed_once: set[str] = set()
        self.creates = 0
        self.uploads = 0
        self.live_requests = 0
        self.crashes: list[str] = []
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self._gate = threading.Event()
        self._gate.set()
        self._server: ThreadingHTTPServer | None = None
        self._client = httpx.Client(timeout=600.0)
        self.anthropic_params: dict[str, dict[str, Any]] = {}

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def hold(self) -> None:
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    # -- the API --------------------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}-{next(self._ids)}"

    def upload(self, content_type: str, body: bytes) -> dict[str, Any]:
        head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(head + body)
        fields: dict[str, bytes] = {}
        filename = ""
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            fields[str(name)] = payload if isinstance(payload, bytes) else b""
            filename = part.get_filename() or filename
        if fields.get("purpose") != b"batch" or "file" not in fields:
            raise ValueError("a batch file needs purpose=batch and a file")
        file_id = self._new_id("file")
        with self._lock:
            self.files[file_id] = fields["file"]
            self.uploads += 1
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(fields["file"]),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": "batch",
        }

    def create(self, request: dict[str, Any]) -> dict[str, Any]:
        content = self.files[request["input_file_id"]]
        lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
        batch_id = self._new_id("batch")
        batch = {
            "id": batch_id,
            "object": "batch",
            "endpoint": request["endpoint"],
            "input_file_id": request["input_file_id"],
            "completion_window": request["completion_window"],
            "status": "validating",
            "created_at": int(time.time()),
            "output_file_id": None,
            "error_file_id": None,
            "metadata": request.get("metadata"),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
        }
        with self._lock:
            self.creates += 1
            self.batches[batch_id] = batch
            self.submitted.update(line["custom_id"] for line in lines)
        threading.Thread(target=self._run, args=(batch, lines), daemon=True).start()
        return batch

    def _run(self, batch: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        try:
            self._execute(batch, lines)
        except Exception as exc:  # a broken run must end the batch, not leave it polled forever
            self.crashes.append(repr(exc))
            batch["status"] = "failed"

    def _execute(self, batch: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        self._gate.wait()
        batch["status"] = "in_progress"
        out: list[str] = []
        errors: list[str] = []
        for number, line in enumerate(lines):
            custom_id = line["custom_id"]
            with self._lock:
                failing = self.fail(custom_id) and custom_id not in self.failed_once
                if failing:
                    self.failed_once.add(custom_id)
            if failing:
                errors.append(
                    json.dumps(
                        {
                            "id": f"req-{number}",
                            "custom_id": custom_id,
                            "response": {
                                "status_code": 500,
                                "request_id": f"req-{number}",
                                "body": {"error": {"message": "injected", "type": "server_error"}},
                            },
                            "error": None,
                        }
                    )
                )
                batch["request_counts"]["failed"] += 1
                continue
            if line["url"] == "/v1/responses":
                status, body = 200, self.run_response(line["body"])
            else:
                reply = self._client.post(self.upstream + line["url"], json=line["body"])
                status, body = reply.status_code, reply.json()
            if self.strip_usage(custom_id):
                body.pop("usage", None)
            out.append(
                json.dumps(
                    {
                        "id": f"req-{number}",
                        "custom_id": custom_id,
                        "response": {
                            "status_code": status,
                            "request_id": f"req-{number}",
                            "body": body,
                        },
                        "error": None,
                    }
                )
            )
            batch["request_counts"]["completed"] += 1
        with self._lock:
            if out:
                batch["output_file_id"] = file_id = self._new_id("file")
                self.files[file_id] = ("\n".join(out) + "\n").encode()
            if errors:
                batch["error_file_id"] = file_id = self._new_id("file")
                self.files[file_id] = ("\n".join(errors) + "\n").encode()
            batch["status"] = "completed"

    # -- the Responses API ------------------------------------------------------------------

    def run_response(self, body: dict[str, Any]) -> dict[str, Any]:
        """One Responses request on the upstream model: the answer as a Response."""
        given = body["input"]
        messages = [{"role": "user", "content": given}] if isinstance(given, str) else given
        cap = int(body["max_output_tokens"])
        chat = {
            "messages": messages,
            "max_tokens": cap,
            "thinking_budget_tokens": cap,
            "temperature": body.get("temperature", 0.0),
        }
        reply = self._client.post(self.upstream + "/v1/chat/completions", json=chat)
        reply.raise_for_status()
        answer = reply.json()
        choice = answer["choices"][0]
        thought = choice["message"].get("reasoning_content") or ""
        counted = self._client.post(self.upstream + "/tokenize", json={"content": thought})
        reasoning = len(counted.json()["tokens"]) if thought else 0
        usage = answer.get("usage") or {}
        cut = choice["finish_reason"] == "length"
        output: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs-1", "summary": []}]
        if choice["message"].get("content"):
            text = choice["message"]["content"]
            part = {"type": "output_text", "text": text, "annotations": []}
            output.append({"type": "message", "role": "assistant", "content": [part]})
        completion = int(usage.get("completion_tokens", 0))
        return {
            "id": self._new_id("resp"),
            "object": "response",
            "model": body["model"],
            "status": "incomplete" if cut else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
            "output": output,
            "usage": {
                "input_tokens": int(usage.get("prompt_tokens", 0)),
                "output_tokens": max(completion, reasoning),
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "input_tokens_details": {"cached_tokens": 0},
                "total_tokens": int(usage.get("prompt_tokens", 0)) + max(completion, reasoning),
            },
        }

    # -- Anthropic's Message Batches --------------------------------------------------------

    def run_message(self, params: dict[str, Any]) -> dict[str, Any]:
        """One Messages request on the upstream model: the answer as a Message."""
        messages = list(params["messages"])
        if params.get("system"):
            messages = [{"role": "system", "content": params["system"]}, *messages]
        thinking = params.get("thinking") or {"type": "disabled"}
        # Adaptive thinking has no budget of its own (the model decides, `max_tokens` caps it;
        # the loopback ignores `output_config.effort`).
        budget = {"enabled": thinking.get("budget_tokens", 0), "adaptive": params["max_tokens"]}
        budget = int(budget.get(thinking["type"], 0))
        body: dict[str, Any] = {
            "messages": messages,
            "max_tokens": params["max_tokens"],
            "thinking_budget_tokens": budget,
            "temperature": params.get("temperature", 0.0),
        }
        if params.get("stop_sequences"):
            body["stop"] = params["stop_sequences"]
        reply = self._client.post(self.upstream + "/v1/chat/completions", json=body)
        reply.raise_for_status()
        answer = reply.json()
        choice = answer["choices"][0]
        content: list[dict[str, Any]] = []
        if choice["message"].get("reasoning_content"):
            thought = choice["message"]["reasoning_content"]
            content.append({"type": "thinking", "thinking": thought, "signature": "loopback"})
        if choice["message"].get("content") is not None:
            content.append({"type": "text", "text": choice["message"]["content"]})
        usage = answer.get("usage") or {}
        return {
            "id": self._new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": params["model"],
            "content": content,
            "stop_reason": "max_tokens" if choice["finish_reason"] == "length" else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.get("prompt_tokens", 0),
                "output_tokens": usage.get("completion_tokens", 0),
            },
        }

    def live_message(self, chat: dict[str, Any]) -> dict[str, Any]:
        """A live chat request for a Claude model, as Anthropic's OpenAI-compatible endpoint
        answers it: the text (no thinking) and the usage in chat terms."""
        from cotplan.planner.batch_anthropic import messages_params

        body = {k: v for k, v in chat.items() if k not in ("stream", "extra_body")}
        message = self.run_message(messages_params(body))
        text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
        usage = message["usage"]
        finish = "length" if message["stop_reason"] == "max_tokens" else "stop"
        return {
            "id": message["id"],
            "object": "chat.completion",
            "model": message["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": usage["input_tokens"],
                "completion_tokens": usage["output_tokens"],
                "total_tokens": usage["input_tokens"] + usage["output_tokens"],
            },
        }

    def create_messages(self, request: dict[str, Any]) -> dict[str, Any]:
        requests = request["requests"]
        batch_id = self._new_id("msgbatch")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        batch = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {
                "processing": len(requests),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "ended_at": None,
            "created_at": now,
            "expires_at": now,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": None,
        }
        with self._lock:
            self.creates += 1
            self.batches[batch_id] = batch
            self.submitted.update(r["custom_id"] for r in requests)
            for r in requests:
                self.anthropic_params[r["custom_id"]] = r["params"]
        threading.Thread(target=self._run_messages, args=(batch, requests), daemon=True).start()
        return batch

    def _run_messages(self, batch: dict[str, Any], requests: list[dict[str, Any]]) -> None:
        results: list[str] = []
        counts = batch["request_counts"]
        try:
            self._gate.wait()
            for request in requests:
                custom_id = request["custom_id"]
                with self._lock:
                    failing = self.fail(custom_id) and custom_id not in self.failed_once
                    if failing:
                        self.failed_once.add(custom_id)
                if failing:
                    error = {"type": "api_error", "message": "injected"}
                    result: dict[str, Any] = {
                        "type": "errored",
                        "error": {"type": "error", "error": error},
                    }
                    counts["errored"] += 1
                else:
                    message = self.run_message(request["params"])
                    if self.strip_usage(custom_id):
                        message.pop("usage")
                    result = {"type": "succeeded", "message": message}
                    counts["succeeded"] += 1
                counts["processing"] -= 1
                results.append(json.dumps({"custom_id": custom_id, "result": result}))
        except Exception as exc:  # a broken run must end the batch, not leave it polled forever
            self.crashes.append(repr(exc))
        with self._lock:
            self.files[batch["id"]] = ("\n".join(results) + "\n").encode()
            batch["results_url"] = (
                f"{self.base_url.removesuffix('/v1')}/v1/messages/batches/{batch['id']}/results"
            )
            batch["ended_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            batch["processing_status"] = "ended"

    # -- the HTTP server ------------------------------------------------------------------------

    def start(self) -> BatchServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, payload: Any, raw: bytes | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                if path == "/v1/messages/batches":
                    data = [b for b in owner.batches.values() if b.get("type") == "message_batch"]
                    data.reverse()  # newest first, as the API lists them
                    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
                    page = {"data": data, "has_more": False, "first_id": first, "last_id": last}
                    self._reply(200, page)
                elif path.startswith("/v1/messages/batches/") and path.endswith("/results"):
                    content = owner.files.get(path.split("/")[4])
                    self._reply(200 if content else 404, None, content or b"{}")
                elif path.startswith("/v1/messages/batches/"):
                    batch = owner.batches.get(path.rsplit("/", 1)[1])
                    self._reply(200 if batch else 404, batch or {"error": {"message": "no"}})
                elif path == "/v1/batches":
                    data = [b for b in owner.batches.values() if b.get("object") == "batch"]
                    self._reply(200, {"object": "list", "data": data, "has_more": False})
                elif path.startswith("/v1/batches/"):
                    batch = owner.batches.get(path.rsplit("/", 1)[1])
                    self._reply(200 if batch else 404, batch or {"error": {"message": "no"}})
                elif path.startswith("/v1/files/") and path.endswith("/content"):
                    content = owner.files.get(path.split("/")[3])
                    self._reply(200 if content else 404, None, content or b"{}")
                else:
                    self._reply(404, {"error": {"message": f"no route {path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                path = urlsplit(self.path).path
                if path == "/v1/files":
                    self._reply(200, owner.upload(self.headers["content-type"], body))
                elif path == "/v1/batches":
                    self._reply(200, owner.create(json.loads(body)))
                elif path == "/v1/messages/batches":
                    self._reply(200, owner.create_messages(json.loads(body)))
                elif path == "/v1/responses":
                    with owner._lock:
                        owner.live_requests += 1
                    self._reply(200, owner.run_response(json.loads(body)))
                elif path == "/v1/chat/completions" and str(
                    json.loads(body).get("model", "")
                ).startswith("claude"):
                    with owner._lock:
                        owner.live_requests += 1
                    self._reply(200, owner.live_message(json.loads(body)))
                elif path in ("/v1/chat/completions", "/v1/completions"):
                    with owner._lock:
                        owner.live_requests += 1
                    reply = owner._client.post(owner.upstream + path, content=body)
                    self._reply(reply.status_code, None, reply.content)
                else:
                    self._reply(404, {"error": {"message": f"no route {path}"}})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self._client.close()

    def __enter__(self) -> BatchServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
