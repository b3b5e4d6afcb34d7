"""The real embedded model (SmolLM2-135M under llama.cpp) through the OpenAI-compatible client."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cotplan.backends import local
from cotplan.backends.cache import CallCache
from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import (
    InputError,
    LocalServerError,
    ModelFileError,
    UnknownModelError,
)

pytestmark = pytest.mark.model


def test_generate_counts_tokens_and_respects_the_cap(local_backend: LocalBackend) -> None:
    prompt = "List the days of the week:"
    completion = local_backend.generate(prompt, max_tokens=5)
    assert completion.text.strip()
    assert completion.finish_reason == "length"
    assert completion.truncated
    assert completion.usage.completion_tokens == 5
    assert completion.usage.prompt_tokens == local_backend.count_tokens(prompt)
    assert completion.model.startswith("smollm2-135m-instruct@")


def test_greedy_generation_is_repeatable(local_backend: LocalBackend) -> None:
    first = local_backend.generate("Q: What is 2 + 3?\nA:", max_tokens=12, stop=["\n"])
    second = local_backend.generate("Q: What is 2 + 3?\nA:", max_tokens=12, stop=["\n"])
    assert first.text == second.text
    assert "\n" not in first.text


def test_chat_logprobs_cover_every_generated_token(local_backend: LocalBackend) -> None:
    completion = local_backend.generate(
        [{"role": "user", "content": "Name a colour."}], max_tokens=6, logprobs=3
    )
    assert completion.logprobs is not None
    assert len(completion.logprobs) == completion.usage.completion_tokens
    assert all(len(t.top) == 3 and t.logprob <= 0.0 for t in completion.logprobs)
    assert "".join(t.token for t in completion.logprobs) == completion.text


def test_next_token_probs_follow_the_majority(local_backend: LocalBackend) -> None:
    # 12 ones in 16: the field notes measured P("1") about 0.8 for this model.
    probs = local_backend.next_token_probs("1 1 0 1 1 1 0 1 1 1 0 1 1 1 0 1 ", ["0", "1"])
    assert sum(probs.probs.values()) == pytest.approx(1.0)
    assert probs.probs["1"] > 0.6
    assert 0.5 < probs.covered_mass <= 1.0
    mostly_zeros = local_backend.next_token_probs("0 0 0 1 0 0 0 0 0 0 1 0 0 0 0 0 ", ["0", "1"])
    assert mostly_zeros.probs["0"] > probs.probs["0"]


def test_bad_requests_fail_before_any_request(local_backend: LocalBackend) -> None:
    before = local_backend.stats.requests
    with pytest.raises(InputError, match=r"`candidates`.*not at all.* is 3 tokens"):
        local_backend.next_token_probs("Is the sky blue? ", ["yes", "not at all"])
    with pytest.raises(InputError, match="`prompt`: must not be empty"):
        local_backend.generate("", max_tokens=3)
    with pytest.raises(InputError, match="`max_tokens`"):
        local_backend.generate("hi", max_tokens=0)
    assert local_backend.stats.requests == before


def test_map_keeps_order_under_concurrency(local_backend: LocalBackend) -> None:
    prompts = [f"{i} + {i} =" for i in range(6)]
    texts = local_backend.map(
        lambda p: local_backend.generate(p, max_tokens=3).text, prompts, concurrency=3
    )
    serial = [local_backend.generate(p, max_tokens=3).text for p in prompts]
    assert texts == serial


def test_cache_replays_without_requests_and_keeps_no_key(
    local_model: LocalModel, tmp_path: Path
) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")
    secret = "sk-cotplan-test-secret-0123456789"
    backend = OpenAICompatibleBackend(
        local_model.model_id,
        base_url=local_model.base_url,
        api_key=secret,
        cache=cache,
        cache_namespace=f"local:{local_model.model_id}",
        text_completions=True,
    )
    first = backend.generate("Once upon a time", max_tokens=8)
    replay = backend.generate("Once upon a time", max_tokens=8)
    assert not first.from_cache
    assert replay.from_cache
    assert replay.text == first.text
    assert replay.usage == first.usage
    assert backend.stats.requests == 1
    assert backend.stats.cache_hits == 1
    # A fresh client on a new port (as after a restart) still hits: the key is the weights' id.
    again = local_model.backend(cache=CallCache(tmp_path / "calls.sqlite"))
    assert again.generate("Once upon a time", max_tokens=8).from_cache
    assert stat.S_IMODE(os.stat(cache.path).st_mode) == 0o600
    for path in tmp_path.iterdir():
        assert secret.encode() not in path.read_bytes()


def test_unknown_model_name_suggests_known_ones() -> None:
    with pytest.raises(UnknownModelError, match="smollm2-135m-instruct"):
        LocalModel("smollm2-135m").start()


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "model.gguf"
    bogus.write_text("not a model")
    with pytest.raises(ModelFileError, match="not a GGUF"):
        LocalModel(str(bogus)).start()


def _alive(pid: int, started: str) -> bool:
    """Whether process `pid` (started at clock tick `started`) still runs: not gone, not a
    zombie, and not another process that reused the number."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z" and fields[19] == started


def _start_tick(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def _wait_gone(pid: int, started: str, limit: float = 120.0) -> bool:
    """Poll for up to `limit` seconds (generous: a loaded machine is slow, not broken)."""
    deadline = time.monotonic() + limit
    while _alive(pid, started):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_corrupt_gguf_fails_clearly_and_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + os.urandom(4096))
    started: list[subprocess.Popen[bytes]] = []

    class Recorded(subprocess.Popen[bytes]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    # This test's own server process, not every process on a machine others share.
    monkeypatch.setattr(local.subprocess, "Popen", Recorded)
    with pytest.raises(LocalServerError, match="exited during start-up"):
        # A limit that only stops a hung start: the server exits at once on this file, but on a
        # loaded machine a short limit would turn "exited" into "did not start in time".
        LocalModel(str(corrupt), start_timeout=300).start()
    assert len(started) == 1
    assert started[0].wait(timeout=120) != 0


def test_port_in_use_is_a_clear_error(local_model: LocalModel) -> None:
    with pytest.raises(LocalServerError, match=f"port {local_model.port} .* in use"):
        LocalModel(port=local_model.port).start()


def test_server_crash_mid_session_is_reported() -> None:
    model = LocalModel(parallel=1).start()
    backend = model.backend(cache=None, max_retries=0)
    assert backend.generate("Hello", max_tokens=2).text
    assert model._process is not None
    model._process.kill()
    model._process.wait()
    with pytest.raises(LocalServerError, match="died"):
        backend.generate("Hello again", max_tokens=2)
    model.stop()


def test_server_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        "import time\nfrom cotplan.backends.local import LocalModel\n"
        "m = LocalModel(parallel=1).start()\nprint(m._process.pid, flush=True)\ntime.sleep(60)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    started = _start_tick(child)
    parent.kill()
    parent.wait()
    # The server polls for its parent every half second; allow far more on a busy machine.
    assert _wait_gone(child, started)
