"""A loopback server that implements OpenAI's documented Batch API over a real model server.

Endpoints (platform.openai.com/docs/api-reference/batch and /files, read 2026-12-05):
``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``, ``GET /v1/batches``,
``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``; and ``POST /v1/chat/completions`` and
``/v1/completions`` forwarded as they are, for requests a client sends live. A batch runs its
lines one after another against `upstream` (the embedded llama.cpp server) in a thread, and
writes the output file (answers) and the error file (failed requests) in the documented line
format.

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
            reply = self._client.post(self.upstream + line["url"], json=line["body"])
            body = reply.json()
            if self.strip_usage(custom_id):
                body.pop("usage", None)
            out.append(
                json.dumps(
                    {
                        "id": f"req-{number}",
                        "custom_id": custom_id,
                        "response": {
                            "status_code": reply.status_code,
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
                if path == "/v1/batches":
                    data = list(owner.batches.values())
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
