"""The embedded model served by several single-thread llama.cpp processes (`replicas`)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.errors import InputError, LocalServerError

PROMPTS = [f"Q: What is {a} + {b}?\nA:" for a, b in ((2, 3), (7, 1), (4, 4), (9, 5))]


def _answered(log: Path) -> int:
    """Requests a replica finished, by llama.cpp's own timing lines."""
    return log.read_text(errors="replace").count("total time =")


def _generate(backend: LocalBackend, prompt: str) -> tuple[str, list[float]]:
    completion = backend.generate(prompt, max_tokens=8, logprobs=2)
    assert completion.logprobs is not None
    return completion.text, [t.logprob for t in completion.logprobs]


@pytest.mark.model
def test_a_second_replica_starts_only_when_a_second_thread_needs_it() -> None:
    with LocalModel(threads=1, replicas=2) as model:
        backend = model.backend(cache=None)
        backend.generate("Hello", max_tokens=2)
        assert len(model.base_urls) == 1
        backend.map(lambda p: backend.generate(p, max_tokens=2), ["a", "b", "c"], concurrency=2)
        assert len(model.base_urls) == 2
        assert model.replica_url(1) == model.base_urls[1]
        with pytest.raises(InputError, match="index"):
            model.replica_url(2)


def test_defaults_follow_the_cores_and_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert (LocalModel().threads, LocalModel().replicas) == (1, 2)
    # Clients outside cotplan reach one port only; a chosen thread count is taken as meant.
    assert LocalModel(port=8123).replicas == 1
    assert LocalModel(threads=1).replicas == 1
    # Several slots or batched prompts make answers depend on what shared the batch.
    assert LocalModel(parallel=2).replicas == 1
    assert LocalModel(reproducible=False).replicas == 1
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert (LocalModel().threads, LocalModel().replicas) == (7, 1)
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert (LocalModel().threads, LocalModel().replicas) == (1, 1)


@pytest.mark.parametrize("bad", [0, -1, 65, 1.5, True])
def test_bad_replicas_name_the_field(bad: object) -> None:
    with pytest.raises(InputError, match="replicas"):
        LocalModel(replicas=bad)  # type: ignore[arg-type]


@pytest.mark.model
def test_each_thread_keeps_to_one_replica_and_answers_do_not_depend_on_which(
    local_model: LocalModel,
) -> None:
    backend = local_model.backend(cache=None)
    local_model.replica_url(1)  # started now if no earlier test needed it
    assert len(set(local_model.base_urls)) == 2
    logs = local_model.log_paths
    before = [_answered(log) for log in logs]
    # This thread is the backend's first: every request goes to the first replica.
    alone = [_generate(backend, prompt) for prompt in PROMPTS]
    assert [_answered(log) for log in logs] == [before[0] + 4, before[1]]
    # Two worker threads, one per replica: both answer, with the same tokens and logprobs.
    spread = backend.map(lambda prompt: _generate(backend, prompt), PROMPTS, concurrency=2)
    after = [_answered(log) for log in logs]
    assert after[0] > before[0] + 4
    assert after[1] > before[1]
    assert sum(after) == sum(before) + 8
    assert spread == alone
    assert backend.default_concurrency == 2


@pytest.mark.model
def test_a_dead_replica_is_reported_by_the_thread_it_serves() -> None:
    with LocalModel(threads=1, replicas=2) as model:
        backend = model.backend(cache=None, max_retries=0)
        assert backend.generate("Hello", max_tokens=2).text  # this thread: the first replica
        model.replica_url(1)
        second = model._others[0]._process
        assert second is not None
        second.kill()
        second.wait()
        caught: list[BaseException] = []

        def ask() -> None:  # the backend's second thread: the second replica
            try:
                backend.generate("Hello again", max_tokens=2)
            except BaseException as exc:
                caught.append(exc)

        worker = threading.Thread(target=ask)
        worker.start()
        worker.join(timeout=120)
        assert len(caught) == 1
        assert isinstance(caught[0], LocalServerError)
        assert "died" in str(caught[0])
    assert not model.running
    assert model._others == []
