"""Permutation averaging on the real embedded model (SmolLM2-135M under llama.cpp).

Each test makes a handful of one-token requests. Probabilities from two requests for the same
prompt are compared with a 1% relative tolerance (`REL`): llama.cpp computes a prompt slightly
differently when part of it comes from its prompt cache or is batched with another slot's
request, and relative differences up to 0.5% were seen between such calls here. A wrong
ordering, candidate or chain moves these probabilities by far more (0.70 against 0.90 between
two orderings of the same item).
"""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from cotplan.backends.cache import CallCache
from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.errors import CapabilityError, InputError
from cotplan.permutation.average import permutation_average
from cotplan.permutation.evaluate import score_every_ordering
from cotplan.permutation.fewshot import Example, FewShotTemplate
from cotplan.permutation.fewshot_tasks import make_fewshot_tasks
from cotplan.permutation.schedules import make_orderings, position_counts
from cotplan.permutation.scoring import plan_candidates

pytestmark = pytest.mark.model

REL = 1e-2

ITEM = make_fewshot_tasks("sentiment", n_examples=4, count=1, seed=0)[0]


def _top(backend: LocalBackend, prompt: str) -> dict[str, float]:
    completion = backend.generate(prompt, max_tokens=1, logprobs=20)
    assert completion.logprobs is not None
    return {t: math.exp(lp) for t, lp in completion.logprobs[0].top}


def test_balanced_average_over_one_cycle(local_backend: LocalBackend) -> None:
    result = permutation_average(
        local_backend, ITEM.examples, ITEM.query, ITEM.choices, m=4, schedule="balanced",
        seed=0, template=ITEM.template,
    )  # fmt: skip
    assert result.method == "first_token"
    assert result.m == 4
    assert result.calls == 4
    assert result.per_ordering.shape == (4, 2)
    np.testing.assert_allclose(result.per_ordering.sum(axis=1), 1.0)
    assert result.probs["positive"] == pytest.approx(result.per_ordering[:, 0].mean())
    assert result.answer == max(result.probs, key=result.probs.__getitem__)
    assert (position_counts(result.orderings) == 1).all()
    np.testing.assert_array_equal(result.orderings, make_orderings(4, 4, "balanced", seed=0))
    assert ((result.covered_mass > 0) & (result.covered_mass <= 1)).all()
    assert result.variance["positive"] == pytest.approx(result.sd["positive"] ** 2)
    assert result.probs["positive"] in result.ci["positive"]
    assert result.interval_method == "orderings"
    assert result.cost_usd == Decimal(0)
    prompts = [
        ITEM.template.prompt([ITEM.examples[i] for i in row], ITEM.query)
        for row in result.orderings
    ]
    assert result.usage.prompt_tokens == sum(local_backend.count_tokens(p) for p in prompts)
    # The same number through the backend's own next-token API.
    direct = local_backend.next_token_probs(prompts[0], [" positive", " negative"])
    assert result.per_ordering[0, 0] == pytest.approx(direct.probs[" positive"], rel=REL)
    assert result.covered_mass[0] == pytest.approx(direct.covered_mass, rel=REL)
    frame = result.to_frame()
    assert list(frame["choice"]) == ["positive", "negative"]
    assert frame.attrs["calls"] == 4
    assert len(result.orderings_frame()) == 8


def test_orderings_change_the_answer_probability(local_backend: LocalBackend) -> None:
    # The premise of the whole feature, on this model: the spread over orderings is not zero.
    result = permutation_average(
        local_backend, ITEM.examples, ITEM.query, ITEM.choices, m=4, schedule="random",
        seed=1, template=ITEM.template,
    )  # fmt: skip
    assert result.sd["positive"] > 0.005


def test_multi_token_choices_are_chained(local_backend: LocalBackend) -> None:
    examples = [Example("Statue of Liberty", "New York"), Example("Fenway Park", "Boston"),
                Example("Liberty Bell", "Philadelphia")]  # fmt: skip
    choices = ["New York", "Newark", "Boston"]
    result = permutation_average(
        local_backend, examples, "Empire State Building", choices, m=2, schedule="random"
    )
    assert result.method == "continuation"
    prompt = FewShotTemplate().prompt([examples[i] for i in result.orderings[0]],
                                      "Empire State Building")  # fmt: skip
    first = _top(local_backend, prompt)
    after_new = _top(local_backend, prompt + " New")
    new = first[" New"]
    raw = np.array([new * after_new.get(" York", 0.0), new * after_new.get("ark", 0.0),
                    first.get(" Boston", 0.0)])  # fmt: skip
    np.testing.assert_allclose(result.per_ordering[0], raw / raw.sum(), rtol=REL)
    assert result.covered_mass[0] == pytest.approx(raw.sum(), rel=REL)
    # One request for the prompt and one after the shared " New" per ordering.
    assert result.calls == 4


def test_a_choice_that_is_a_prefix_of_another_gets_the_terminator(
    local_backend: LocalBackend,
) -> None:
    examples = [Example("sky", "blue"), Example("grass", "green"), Example("sea", "blue")]
    prompt = FewShotTemplate().prompt(examples, "teal paint")
    plan = plan_candidates(local_backend, prompt, ["blue", "blueish"], terminator="\n\n")
    assert plan.terminated
    assert plan.continuations == (" blue\n\n", " blueish\n\n")
    assert all("".join(p) == c for p, c in zip(plan.pieces, plan.continuations, strict=True))
    result = permutation_average(local_backend, examples, "teal paint", ["blue", "blueish"], m=1)
    assert any("terminator" in note for note in result.notes)
    assert sum(result.probs.values()) == pytest.approx(1.0)
    assert result.interval_method == "none"


def test_adaptive_m_stops_once_the_interval_is_narrow_enough(
    local_backend: LocalBackend,
) -> None:
    result = permutation_average(
        local_backend, ITEM.examples, ITEM.query, ITEM.choices, m=20, schedule="random",
        template=ITEM.template, target_width=0.99, min_m=4, check_every=2,
    )  # fmt: skip
    assert result.m == 4
    assert result.stopped_early
    assert "target_width" in result.stop_reason
    assert result.calls == 4
    np.testing.assert_array_equal(result.orderings, make_orderings(4, 20, "random")[:4])


def test_without_logprobs_it_samples_and_the_cache_keys_on_the_seed(
    local_model: LocalModel, tmp_path: Path
) -> None:
    cache = CallCache(tmp_path / "calls.sqlite")
    backend = local_model.backend(cache=cache)
    backend.supports_logprobs = False  # what a reasoning model reports
    kwargs = {"m": 2, "schedule": "random", "seed": 3, "samples": 3, "template": ITEM.template}
    first = permutation_average(backend, ITEM.examples, ITEM.query, ITEM.choices, **kwargs)  # type: ignore[arg-type]
    assert first.method == "sampled"
    assert any("no logprobs" in note for note in first.notes)
    assert first.calls == 6
    assert first.cached_calls == 0
    assert len(cache) == 6  # six distinct seeds, six distinct cache entries
    np.testing.assert_allclose(first.per_ordering.sum(axis=1), 1.0)
    # Add-one smoothing: each probability is (count + 1) / (matched + 2) with counts from 3.
    allowed = {(c + 1) / (k + 2) for k in range(4) for c in range(k + 1)}
    assert all(any(math.isclose(p, a) for a in allowed) for p in first.per_ordering.ravel())
    again = permutation_average(backend, ITEM.examples, ITEM.query, ITEM.choices, **kwargs)  # type: ignore[arg-type]
    assert again.cached_calls == 6
    np.testing.assert_array_equal(again.per_ordering, first.per_ordering)
    with pytest.raises(CapabilityError, match=r"returns no logprobs"):
        permutation_average(backend, ITEM.examples, ITEM.query, ITEM.choices, m=2,
                            method="logprobs")  # fmt: skip


def test_choices_the_model_cannot_score_are_refused(local_backend: LocalBackend) -> None:
    with pytest.raises(InputError, match=r"`choices`: the model gave none of"):
        permutation_average(local_backend, ITEM.examples, ITEM.query,
                            ["Zyzzyva", "Quixotic"], m=2, template=ITEM.template)  # fmt: skip


def test_every_ordering_pool_agrees_with_permutation_average(local_backend: LocalBackend) -> None:
    item = make_fewshot_tasks("parity", n_examples=3, count=1, seed=0)[0]
    pool = score_every_ordering(
        local_backend, item.examples, item.query, item.choices, template=item.template
    )
    assert pool.orderings.shape == (6, 3)
    assert pool.calls == 6
    result = permutation_average(
        local_backend, item.examples, item.query, item.choices, m=3, schedule="balanced",
        template=item.template,
    )  # fmt: skip
    np.testing.assert_allclose(result.per_ordering, pool.lookup(result.orderings), rtol=REL)


def test_a_chat_endpoint_scores_single_tokens_and_samples_longer_choices(
    local_model: LocalModel,
) -> None:
    backend = local_model.backend(cache=None)
    backend.text_completions = False  # the same model through /v1/chat/completions
    examples = [Example("Statue of Liberty", "New York"), Example("Fenway Park", "Boston")]
    with pytest.raises(CapabilityError, match=r"chat endpoint cannot score multi-token"):
        permutation_average(backend, examples, "Empire State Building", ["New York", "Newark"],
                            m=2, method="logprobs")  # fmt: skip
    sampled = permutation_average(
        backend, examples, "Empire State Building", ["New York", "Newark"], m=2, samples=2
    )
    assert sampled.method == "sampled"
    assert any("chat endpoint" in note for note in sampled.notes)
    assert sampled.calls == 4


def test_budgeted_reasoning_per_ordering_is_counted_in_calls_tokens_and_cost(
    local_backend: LocalBackend,
) -> None:
    from cotplan.generate.budgeted import budgeted_answer
    from cotplan.tasks.item import TaskItem

    result = permutation_average(
        local_backend, ITEM.examples, ITEM.query, ITEM.choices, m=2, schedule="random",
        template=ITEM.template, k=8,
    )  # fmt: skip
    assert result.method == "budgeted"
    assert result.k == 8
    assert any("at most 8 reasoning tokens" in note for note in result.notes)
    # The first ordering's probabilities are the model's for the choices right after the answer
    # marker that closed budgeted_answer's reasoning on that ordering's prompt.
    prompt = ITEM.template.prompt([ITEM.examples[i] for i in result.orderings[0]], ITEM.query)
    item = TaskItem(id="x", prompt=prompt, answer=ITEM.choices[0], kind="choice",
                    choices=ITEM.choices, family="permutation")  # fmt: skip
    direct = budgeted_answer(local_backend, item, 8)
    assert direct.answer_prompt.endswith("Answer:")
    first = [local_backend.next_token_probs(direct.answer_prompt, [" " + c]) for c in ITEM.choices]
    raw = np.array([p.raw[" " + c] for p, c in zip(first, ITEM.choices, strict=True)])
    np.testing.assert_allclose(result.per_ordering[0], raw / raw.sum(), rtol=1e-6)
    assert not np.allclose(result.per_ordering[0], [2 / 3, 1 / 3])  # not a vote
    # Reasoning + answer + one scoring request per ordering; at most k reasoning tokens each.
    assert result.calls == 2 * (direct.calls + 1)
    assert 0 < result.usage.reasoning_tokens <= 2 * 8
    assert result.usage.prompt_tokens > 2 * direct.question_tokens
    assert result.cost_usd == Decimal(0)
