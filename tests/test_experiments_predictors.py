"""Predictors: exact references against closed forms, planted predictors, backend formatting."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cotplan.backends.base import Backend, Completion, NextTokenProbs
from cotplan.errors import InputError, ResponseFormatError
from cotplan.research.experiments.predictors import (
    BackendPredictor,
    BetaBernoulli,
    ClippedMLE,
    Oracle,
    PositionalBias,
    Predictor,
    Recency,
    kt,
    laplace,
    parse_bit_positions,
)

bits_lists = st.lists(st.lists(st.integers(0, 1), min_size=6, max_size=6), min_size=1, max_size=8)


def test_laplace_and_kt_closed_forms() -> None:
    assert laplace().prob_one([[1, 1, 0]])[0] == pytest.approx(3 / 5)
    assert kt().prob_one([[1, 1, 0]])[0] == pytest.approx(2.5 / 4)
    assert laplace().prob_one([[]])[0] == pytest.approx(0.5)
    assert BetaBernoulli(2, 6).prob_one([[]])[0] == pytest.approx(0.25)


def test_clipped_mle_and_oracle() -> None:
    mle = ClippedMLE(0.05)
    assert list(mle.prob_one([[], [1, 1], [0, 0, 0], [1, 0, 0, 0]])) == pytest.approx(
        [0.5, 0.95, 0.05, 0.25]
    )
    assert Oracle(0.3).prob_one([[1, 1, 1]])[0] == 0.3


@given(rows=bits_lists)
@settings(max_examples=40, deadline=None)
def test_prefix_probs_agree_with_prob_one(rows: list[list[int]]) -> None:
    bits = np.asarray(rows, dtype=np.int8)
    for predictor in (
        laplace(),
        kt(),
        ClippedMLE(),
        PositionalBias(period=5),
        PositionalBias(amplitude=0.5, period=4, mode="temperature"),
        Recency(0.7),
    ):
        fast = predictor.prefix_probs(bits, [0, 2, 5])
        slow = predictor.prob_one([r[:t] for r in rows for t in (0, 2, 5)]).reshape(fast.shape)
        assert np.allclose(fast, slow)


@given(rows=bits_lists, seed=st.integers(0, 1000))
@settings(max_examples=30, deadline=None)
def test_exchangeable_references_ignore_order(rows: list[list[int]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    shuffled = [list(rng.permutation(r)) for r in rows]
    for predictor in (laplace(), kt(), ClippedMLE()):
        assert predictor.exchangeable
        assert np.allclose(predictor.prob_one(rows), predictor.prob_one(shuffled))


def test_recency_is_laplace_without_decay_and_order_dependent_with_it() -> None:
    rows = [[1, 1, 0, 0, 0], [0, 0, 0, 1, 1]]
    assert np.allclose(Recency(1.0).prob_one(rows), laplace().prob_one(rows))
    decayed = Recency(0.5).prob_one(rows)
    assert decayed[1] > decayed[0]  # recent ones weigh more


def test_sample_paths_match_between_vectorised_and_generic() -> None:
    u = np.random.default_rng(0).random((6, 12))
    context = [1, 0, 1, 1]
    fast = laplace().sample_paths(context, u)
    generic = Predictor.sample_paths(laplace(), context, u)  # the one-step-at-a-time default
    assert np.array_equal(fast, generic)
    assert np.array_equal(
        Recency(0.8).sample_paths(context, u), Predictor.sample_paths(Recency(0.8), context, u)
    )


# -- the backend predictor: prompt formatting and parsing (a transport double, no model) ------


class _RecordingBackend(Backend):
    """Answers P("1") = 0.75 with covered mass 0.9 and records prompts: a parsing double."""

    def __init__(self, tokens_for_0101: int = 7) -> None:
        self.prompts: list[tuple[str, tuple[str, ...]]] = []
        self.tokens = tokens_for_0101
        self.default_concurrency = 1

    def generate(self, prompt: Any, **kwargs: Any) -> Completion:
        raise NotImplementedError

    def next_token_probs(self, prompt: Any, candidates: Sequence[str]) -> NextTokenProbs:
        self.prompts.append((prompt, tuple(candidates)))
        return NextTokenProbs.from_logprobs(
            [(candidates[1], np.log(0.675)), (candidates[0], np.log(0.225))], candidates
        )

    def count_tokens(self, text: str) -> int:
        return self.tokens


def test_backend_prompt_space_separated_with_trailing_space() -> None:
    backend = _RecordingBackend(tokens_for_0101=7)
    predictor = BackendPredictor(backend)
    q = predictor.prefix_probs(np.array([[0, 1, 1]], dtype=np.int8), [2, 1, 3])
    assert q[0].tolist() == pytest.approx([0.75, 0.75, 0.75])
    # Requests go in increasing length whatever order the lengths were asked in.
    assert [p for p, _ in backend.prompts] == ["0 ", "0 1 ", "0 1 1 "]
    assert backend.prompts[0][1] == ("0", "1")
    assert predictor.requests_made == 3
    assert predictor.mean_covered_mass == pytest.approx(0.9)


def test_backend_prompt_leading_space_style() -> None:
    backend = _RecordingBackend(tokens_for_0101=4)
    predictor = BackendPredictor(backend, instruction="Flips:\n")
    predictor.prob_one([[], [1, 0]])
    assert backend.prompts == [("Flips:\n", ("0", "1")), ("Flips:\n1 0", (" 0", " 1"))]


def test_backend_empty_prefix_needs_instruction() -> None:
    predictor = BackendPredictor(_RecordingBackend())
    with pytest.raises(InputError, match="`prefixes`: an empty prefix needs"):
        predictor.prob_one([[]])
    with pytest.raises(InputError, match="`style`: must be"):
        BackendPredictor(_RecordingBackend(), style="bits")


def test_parse_prompt_logprobs_positions() -> None:
    tokens = [
        ("Go", {}),
        (":", {"x": -1.0}),
        ("1", {"0": np.log(0.2), "1": np.log(0.6)}),
        (" ", {" ": -0.01}),
        ("0", {"0": np.log(0.3), "1": np.log(0.3)}),
        (" ", {" ": -0.01}),
        ("0", {"1": np.log(0.9)}),
    ]
    parsed = parse_bit_positions(tokens, 3, style="space-separated")
    assert [round(q, 3) for _, _, q in parsed] == [0.75, 0.5, 1.0]
    assert [m for _, m, _ in parsed] == [False, False, True]
    with pytest.raises(ResponseFormatError, match="expected 4 bit tokens"):
        parse_bit_positions(tokens, 4, style="space-separated")


def test_backend_needs_an_instruction_for_the_empty_prefix() -> None:
    assert not BackendPredictor(_RecordingBackend()).can_score_empty
    assert BackendPredictor(_RecordingBackend(), instruction="Bits:\n").can_score_empty
    assert laplace().can_score_empty


def test_openai_compatible_clients_score_all_positions_only_where_declared() -> None:
    from cotplan.backends.openai_compat import OpenAICompatibleBackend

    url = "http://127.0.0.1:9/v1"
    plain = OpenAICompatibleBackend("m", base_url=url)
    vllm = OpenAICompatibleBackend("m", base_url=url, prompt_logprobs=True)
    assert not BackendPredictor(plain, style="space-separated")._all_positions()
    assert BackendPredictor(vllm, style="space-separated")._all_positions()


def test_specs_name_the_exact_references_and_p() -> None:
    from cotplan.research.experiments import exact_predictor, open_predictor, read_p

    assert exact_predictor("recency:0.8").name == Recency(0.8).name  # type: ignore[union-attr]
    assert exact_predictor("openai:gpt-4o-mini") is None
    with open_predictor("kt") as predictor:
        assert predictor.name == kt().name
    assert read_p("prior") is None
    assert read_p("0.25") == 0.25
    with pytest.raises(InputError, match=r"`p`: must be a number in \(0, 1\) or 'prior'"):
        read_p("1")
