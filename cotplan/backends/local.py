"""The embedded default model: llama.cpp serving a GGUF on 127.0.0.1, reached like any API.

`LocalModel` starts the server in a child process on a free loopback port and hands out
backends that go through exactly the same `OpenAICompatibleBackend` code that talks to OpenAI or
vLLM; only the tokenizer (the server's /tokenize endpoint) and crash reporting are added.

    with LocalModel() as model:
        backend = model.backend()
        print(backend.generate("The capital of France is", max_tokens=5).text)
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx2 as httpx
import openai

from cotplan import paths
from cotplan.backends.adapters import ADAPTER_ALIASES, KNOWN_ADAPTERS, locate_adapter
from cotplan.backends.cache import CallCache
from cotplan.backends.models import DEFAULT_MODEL, check_gguf, locate, sha256_file
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import (
    BackendError,
    InputError,
    LocalServerError,
    ServerUnreachableError,
)
from cotplan.validation import require_int

__all__ = ["LocalBackend", "LocalModel", "default_cache", "require_loopback"]

CacheChoice = CallCache | None | Literal["default"]


def default_cache() -> CallCache | None:
    """The user's call cache, or None when `COTPLAN_CACHE=off`."""
    if os.environ.get("COTPLAN_CACHE", "").lower() in {"off", "0", "false", "no"}:
        return None
    return CallCache(paths.cache_path())


def resolve_cache(cache: CacheChoice) -> CallCache | None:
    return default_cache() if cache == "default" else cache


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


class LocalModel:
    """A llama.cpp server for one GGUF model, on 127.0.0.1, in a child process.

    Parameters
    ----------
    model:
        A known model name (default ``smollm2-135m-instruct``), a shipped adapter's name or
        alias (``thinking``: `cotplan.backends.adapters`), or a path to a GGUF file.
    port:
        The loopback port; None picks a free one.
    n_ctx:
        Context length per parallel slot: 4096 by default, or a shipped adapter's own (8192
        for the long thinker, whose uncapped runs pass 4096 with their prompt).
    parallel:
        Requests the server decodes at once (slots). The default, 1, keeps greedy results
        reproducible: with several slots llama.cpp decodes concurrent requests in one batch and
        the result then depends on which requests shared it (`benchmarks/local_parallel.py`
        prints how often repeated runs differ, and the throughput of each setting).
    threads:
        CPU threads for each llama.cpp process. None (the default) leaves one core free: when
        another process competes for the cores, a descheduled llama.cpp worker stalls every
        step and using all cores becomes many times slower than leaving one free
        (`benchmarks/local_threads.py --busy 1` prints the comparison).
    replicas:
        llama.cpp processes serving the same model, each on its own loopback port; a backend
        sends each of its worker threads to one of them (started when a thread first needs
        it), so an item's requests share one prompt cache. None (the default) runs one per
        core where a core left free would leave a single thread (machines of 2 cores or
        fewer) and one elsewhere: single-thread processes use both cores of a small machine
        without the stall above, and each answer is a function of its prompt alone, so
        results do not depend on the count (`benchmarks/local_replicas.py` prints both). With
        `port` given there is one, since clients outside cotplan reach only that port.
    start_timeout:
        Seconds to wait for the model to load and the port to answer.
    reproducible:
        Evaluate prompts one token at a time (llama.cpp's micro-batch of 1). llama.cpp's
        logits depend on how a prompt was split into batches, and its prompt cache makes that
        split depend on what the server was asked before: a retried request, or the same items
        in another order, then gets slightly different probabilities (and, rarely, another
        greedy token). One token at a time makes every answer a function of its prompt alone,
        at the price of slower prompt evaluation (`benchmarks/local_parallel.py` prints both).
    adapter:
        A LoRA adapter GGUF to apply on `model` (e.g. one `cotplan models train-thinking`
        wrote); its checksum joins the model id, so its answers never mix with the base's in
        the call cache. The shipped thinking adapter is simply ``model="thinking"``.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        port: int | None = None,
        n_ctx: int | None = None,
        parallel: int = 1,
        threads: int | None = None,
        replicas: int | None = None,
        start_timeout: float = 120.0,
        reproducible: bool = True,
        adapter: str | os.PathLike[str] | None = None,
    ) -> None:
        if port is not None and not (0 < port < 65536):
            raise InputError(f"must be in 1..65535, got {port!r}", field="port")
        if n_ctx is None:
            # The long thinker writes up to about 2,700 tokens after its prompt, uncapped more:
            # its slots get SmolLM2's whole context (adapters.AdapterSpec.context).
            spec = KNOWN_ADAPTERS.get(ADAPTER_ALIASES.get(model, model))
            n_ctx = spec.context if spec is not None else 4096
        if n_ctx < 64:
            raise InputError(f"must be at least 64, got {n_ctx!r}", field="n_ctx")
        if parallel < 1:
            raise InputError(f"must be at least 1, got {parallel!r}", field="parallel")
        self.model = model
        self.port = port
        self.n_ctx = n_ctx
        self.parallel = parallel
        cores = os.cpu_count() or 2
        self.threads = max(1, cores - 1) if threads is None else threads
        if replicas is None:
            small = threads is None and self.threads == 1 and port is None
            replicas = cores if small and reproducible and parallel == 1 else 1
        self.replicas = require_int(replicas, "replicas", low=1, high=64)
        self.start_timeout = start_timeout
        self.reproducible = reproducible
        self.adapter = None if adapter is None else Path(adapter)
        self.path: Path | None = None
        self.model_id = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._others: list[LocalModel] = []
        self._starting = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def base_url(self) -> str:
        """The first replica's URL: the one to give clients outside cotplan."""
        if self.port is None:
            raise LocalServerError("the local model is not started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def base_urls(self) -> list[str]:
        """The started replicas' URLs, the first being `base_url`."""
        return [self.base_url, *(other.base_url for other in self._others)]

    @property
    def log_paths(self) -> list[Path]:
        """Every started replica's llama.cpp log (its timing lines say what it evaluated)."""
        replicas = [self, *self._others]
        return [r._log_path for r in replicas if r._log_path is not None]

    def start(self) -> LocalModel:
        """Load the model and wait until the first replica answers; idempotent. The others
        start when a backend thread first needs one (`replica_url`), so a process that never
        sends two requests at once never pays for a second server."""
        if not self.running:
            self._start_one()
        return self

    def replica_url(self, index: int) -> str:
        """Replica `index`'s URL (0 is `base_url`), starting it and those before it if needed."""
        index = require_int(index, "index", low=0, high=self.replicas - 1)
        if index == 0:
            return self.base_url
        with self._starting:
            if not self.running:
                raise LocalServerError("the local model is not started")
            while len(self._others) < index:
                other = self._replica()
                other.start()
                self._others.append(other)
            return self._others[index - 1].base_url

    def _replica(self) -> LocalModel:
        return LocalModel(
            self.model,
            n_ctx=self.n_ctx,
            parallel=self.parallel,
            threads=self.threads,
            replicas=1,
            start_timeout=self.start_timeout,
            reproducible=self.reproducible,
            adapter=self.adapter,
        )

    def _start_one(self) -> None:
        serve_args = self._model_args()
        port = self.port or _free_port()
        if _port_in_use(port):
            raise LocalServerError(f"port {port} on 127.0.0.1 is already in use; pick another")
        self.port = port
        logs = paths.subfolder("logs")
        self._log_path = logs / f"llama-server-{port}.log"
        command = [
            sys.executable,
            "-m",
            "cotplan.backends._serve",
            *serve_args,
            "--port",
            str(port),
            "--ctx",
            str(self.n_ctx),
            "--parallel",
            str(self.parallel),
            "--threads",
            str(self.threads),
            "--ubatch",
            "1" if self.reproducible else "0",
        ]
        with open(self._log_path, "wb") as log:
            self._process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self._wait_ready()

    def _model_args(self) -> list[str]:
        """The server's model arguments: the GGUF file, and for an adapter its file (and a
        shipped one's chat template and reasoning format). Sets `path` and `model_id`."""
        shipped = locate_adapter(self.model)
        if shipped is None:
            self.path, self.model_id = locate(self.model)
            if self.adapter is None:
                return ["--model", str(self.path)]
            adapter_path = check_gguf(self.adapter.expanduser().resolve())
            self.model_id += f"+{adapter_path.stem}@{sha256_file(adapter_path)[:12]}"
            return ["--model", str(self.path), "--lora", str(adapter_path)]
        spec, adapter = shipped
        self.path, _ = locate(spec.base)
        # The template renders a conversation as SmolLM2's does and changes how chat replies are
        # split, not what the model writes (except a continued assistant turn, see
        # docs/thinking-model.md), so the id stays the weights' and saved plans still match.
        self.model_id = spec.model_id
        args = ["--model", str(self.path), "--lora", str(adapter)]
        template = spec.template_path()
        if template is not None:
            args += ["--chat-template-file", str(template)]
        return [*args, "--reasoning-format", spec.reasoning_format]

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        url = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                code = None if self._process is None else self._process.returncode
                self._process = None
                raise LocalServerError(
                    f"the llama.cpp server for {self.path} exited during start-up (exit code "
                    f"{code}); last log lines: {self.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=1.0).status_code == 200:
                    return
            time.sleep(0.1)
        self.stop()
        raise LocalServerError(
            f"the llama.cpp server did not answer within {self.start_timeout:.0f} s; "
            f"last log lines: {self.log_tail()}"
        )

    def log_tail(self, lines: int = 5) -> str:
        """The last lines the server wrote, for error messages."""
        if self._log_path is None or not self._log_path.exists():
            return "(no log)"
        text = self._log_path.read_text(errors="replace").strip().splitlines()
        keep = [line for line in text if "error" in line.lower() or "fail" in line.lower()]
        return " | ".join((keep or text)[-lines:]) or "(empty log)"

    def stop(self) -> None:
        """Stop every replica and wait for them to exit; idempotent."""
        others, self._others = self._others, []
        for other in others:
            other.stop()
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> LocalModel:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()

    # -- what callers use -----------------------------------------------------------------------

    def backend(
        self,
        *,
        cache: CacheChoice = "default",
        max_retries: int = 2,
        timeout: float = 300.0,
        base_url: str | None = None,
    ) -> LocalBackend:
        """A Backend for this server, through the OpenAI-compatible client.

        `timeout` is per request; a long generation on a busy 2-core machine can take minutes.
        `base_url` sends the requests elsewhere, e.g. to a `cotplan.backends.testing.FaultProxy` in
        front of this server; the tokenizer and crash reports still use the server itself. It must
        be a loopback address: the embedded model's traffic never leaves this machine.
        """
        if base_url is not None:
            require_loopback(base_url, field="base_url")
        require_int(max_retries, "max_retries", low=0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise InputError(f"must be a number of seconds > 0, got {timeout!r}", field="timeout")
        self.start()
        return LocalBackend(
            self,
            cache=resolve_cache(cache),
            max_retries=max_retries,
            timeout=timeout,
            base_url=base_url,
        )

    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` by the model's own tokenizer (no BOS)."""
        try:
            response = httpx.post(
                f"http://127.0.0.1:{self.port}/tokenize",
                json={"content": text, "add_special": False},
                timeout=30.0,
            )
            response.raise_for_status()
            return [int(t) for t in response.json()["tokens"]]
        except httpx.HTTPError as exc:
            self.raise_if_dead()
            raise ServerUnreachableError(f"tokenize failed on {self.base_url}: {exc}") from exc

    def raise_if_dead(self) -> None:
        """Turn a dead child process (any replica's) into a clear `LocalServerError`."""
        for other in self._others:
            other.raise_if_dead()
        process = self._process
        if process is not None and process.poll() is not None:
            self._process = None
            raise LocalServerError(
                f"the embedded llama.cpp server died (exit code {process.returncode}); "
                f"last log lines: {self.log_tail()}"
            )


class LocalBackend(OpenAICompatibleBackend):
    """The OpenAI-compatible client pointed at a `LocalModel`, with its tokenizer."""

    supports_tokenize = True

    def __init__(
        self,
        server: LocalModel,
        *,
        cache: CallCache | None,
        max_retries: int = 2,
        timeout: float = 300.0,
        base_url: str | None = None,
    ) -> None:
        self.server = server
        # A given base_url (a fault proxy, say) takes every request; otherwise each worker
        # thread keeps to one replica, so an item's thinking and its forced answers share
        # that replica's prompt cache.
        replicas = 1 if base_url is not None else server.replicas
        super().__init__(
            server.model_id,
            base_url=base_url or server.base_url,
            cache=cache,
            # The weights' checksum, not the port, identifies this model in the cache.
            cache_namespace=f"local:{server.model_id}",
            text_completions=True,
            tokenizer=lambda text: len(server.tokenize(text)),
            max_top_logprobs=20,
            max_retries=max_retries,
            timeout=timeout,
            concurrency=server.parallel * replicas,
            provider="llama.cpp",
        )
        self._replica_clients: list[openai.OpenAI | None] = [self._client]
        self._replica_clients += [None] * (replicas - 1)
        self._threads_seen = itertools.count()
        self._replica_of_thread = threading.local()

    def _client_for_this_thread(self) -> openai.OpenAI:
        index = getattr(self._replica_of_thread, "index", None)
        if index is None:
            index = next(self._threads_seen) % len(self._replica_clients)
            self._replica_of_thread.index = index
        client = self._replica_clients[index]
        if client is None:
            # Two threads with one index may both get here first: replica_url starts the
            # replica once under its lock, and either thread's client then serves.
            url = self.server.replica_url(index)
            client = self._replica_clients[index] = self._client.with_options(base_url=url)
        return client

    def tokenize(self, text: str) -> list[int]:
        return self.server.tokenize(text)

    def _send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return super()._send(operation, params)
        except BackendError:
            self.server.raise_if_dead()
            raise


def require_loopback(url: str, *, field: str) -> None:
    """Refuse a URL whose host is not this machine's loopback (127.0.0.0/8, localhost, ::1)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise InputError(f"is not a URL: {url!r}", field=field) from exc
    if parts.scheme not in {"http", "https"} or not host:
        raise InputError(f"must be an http(s) URL on loopback, got {url!r}", field=field)
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise InputError(
        f"must be on loopback (127.0.0.1, localhost or ::1), got host {host!r}", field=field
    )
