"""Training on Beta-Bernoulli sequences: the exact Bayes floor, beating a constant, the store."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from cotplan.errors import InputError  # noqa: E402
from cotplan.research.experiments.predictors import Predictor  # noqa: E402
from cotplan.research.experiments.sequences import beta_bernoulli_sequences  # noqa: E402
from cotplan.research.lab import store  # noqa: E402
from cotplan.research.lab.pe_trainer import (  # noqa: E402
    STORE_KIND,
    EvalPoint,
    LabModel,
    TrainSettings,
    bayes_loss_curve,
    from_spec,
    torch_threads,
    train,
)

#: A tiny model: trains in about a second on one thread.
TINY = {"preset": "quick", "steps": 200, "threads": 1}
#: Fewer steps where only the mechanics matter (reproducibility, the store).
BRIEF = {"preset": "quick", "steps": 30, "threads": 1}


@pytest.fixture(scope="module")
def tiny() -> LabModel:
    return train("none", save=False, **TINY)  # type: ignore[arg-type]


def _brute_force_bayes_loss(t: int, a: float, b: float) -> float:
    """Sum over every sequence of t bits of P(sequence) · E[loss of the next bit]."""
    total = 0.0
    for bits in itertools.product((0, 1), repeat=t):
        k = sum(bits)
        # Beta-Bernoulli marginal of one specific sequence with k ones.
        log_p = (
            math.lgamma(a + k) + math.lgamma(b + t - k) - math.lgamma(a + b + t)
            + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
        )  # fmt: skip
        q = (k + a) / (t + a + b)
        total += math.exp(log_p) * -(q * math.log(q) + (1 - q) * math.log(1 - q))
    return total


@pytest.mark.parametrize(("a", "b"), [(1.0, 1.0), (0.5, 0.5), (2.0, 0.7)])
def test_bayes_loss_curve_is_the_exact_expectation(a: float, b: float) -> None:
    curve = bayes_loss_curve(6, a, b)
    for t in range(6):
        assert curve[t] == pytest.approx(_brute_force_bayes_loss(t, a, b), rel=1e-12)
    assert curve[0] == pytest.approx(
        -(a / (a + b)) * math.log(a / (a + b)) - (b / (a + b)) * math.log(b / (a + b))
    )


@settings(max_examples=25, deadline=None)
@given(st.floats(0.2, 5.0), st.floats(0.2, 5.0))
def test_more_data_never_raises_the_bayes_loss(a: float, b: float) -> None:
    # Conditioning cannot increase expected entropy.
    curve = bayes_loss_curve(40, a, b)
    assert np.all(np.diff(curve) <= 1e-12)


#: How far below the best constant's loss a trained model must be (nats per bit).
MARGIN = 0.05


def _losses(model: Predictor, seed: int = 99) -> tuple[float, float]:
    """The model's log-loss per bit on fresh Beta(1,1) sequences, and the best constant's."""
    bits, _ = beta_bernoulli_sequences(40, 200, seed=seed)
    q = model.prefix_probs(bits)
    model_loss = float(-np.where(bits == 1, np.log(q), np.log1p(-q)).mean())
    f = float(bits.mean())
    return model_loss, -(f * math.log(f) + (1 - f) * math.log1p(-f))


def test_a_tiny_model_beats_the_best_constant_predictor(tiny: LabModel) -> None:
    model = tiny
    report = model.report
    # The constant is fitted on the held-out bits themselves (its best case); log 2 ≈ 0.693 and
    # the Bayes floor of these sequences is about 0.55, so MARGIN is a wide but real gap.
    assert report.constant_loss > 0.68
    assert report.heldout_loss < report.constant_loss - MARGIN
    assert report.beats_constant
    # ... and it gets close to the exact Bayes predictor on the same bits.
    assert 0.0 < report.excess < 0.02
    assert report.excess == pytest.approx(report.heldout_loss - report.bayes_heldout_loss)
    assert report.bayes_loss == pytest.approx(float(bayes_loss_curve(64).mean()))
    # The same check on fresh sequences, through the Predictor interface.
    ours, constant = _losses(model)
    assert ours < constant - MARGIN


def test_the_check_fails_for_models_that_did_not_learn(tiny: LabModel) -> None:
    # Untrained: random attention already leans with the count a little, but not by MARGIN.
    untrained = train("none", save=False, preset="quick", steps=0, threads=1)
    assert untrained.report.heldout_loss > untrained.report.constant_loss - MARGIN
    ours, constant = _losses(untrained)
    assert ours > constant - MARGIN
    # A trained model whose output layer is zeroed predicts exactly 1/2: worse than the constant.
    weights = copy.deepcopy(tiny.trained)
    with torch.no_grad():
        weights.head.weight.zero_()
        weights.head.bias.zero_()
    blind = LabModel(weights, tiny.settings, tiny.report)
    assert np.all(blind.prob_one([[1] * 10, [0, 1]]) == 0.5)
    ours, constant = _losses(blind)
    assert ours >= constant


def test_first_and_settled_times_to_the_target(tiny: LabModel) -> None:
    excesses = [0.004, 0.0009, 0.002, 0.0008, 0.0007]
    history = tuple(
        EvalPoint(100 * (i + 1), 10.0 * (i + 1), 0.6, e) for i, e in enumerate(excesses)
    )
    report = dataclasses.replace(tiny.report, history=history)
    first, settled = report.first_within(0.001), report.settled_within(0.001)
    assert first is not None
    assert first.step == 200
    assert settled is not None
    assert settled.step == 400
    assert report.first_within(0.0001) is None
    assert report.settled_within(0.0001) is None
    summary = report.summary()
    assert summary["step_within_0.001"] == 200
    assert summary["s_settled_0.001"] == 40.0


def test_training_is_reproducible_with_a_seed() -> None:
    first = train("rope", save=False, seed=3, **BRIEF)  # type: ignore[arg-type]
    second = train("rope", save=False, seed=3, **BRIEF)  # type: ignore[arg-type]
    assert first.report.heldout_loss == second.report.heldout_loss
    assert first.report.history == tuple(
        type(p)(p.step, q.train_s, p.heldout_loss, p.excess)
        for p, q in zip(second.report.history, first.report.history, strict=True)
    )
    other = train("rope", save=False, seed=4, **BRIEF)  # type: ignore[arg-type]
    assert other.report.heldout_loss != first.report.heldout_loss


def test_every_encoding_shares_the_data_and_held_out_set() -> None:
    losses = {
        "none": train("none", save=False, seed=5, preset="quick", steps=20, threads=1).report,
        "alibi": train("alibi", save=False, seed=5, preset="quick", steps=20, threads=1).report,
    }
    assert losses["none"].bayes_heldout_loss == losses["alibi"].bayes_heldout_loss
    assert losses["none"].constant_loss == losses["alibi"].constant_loss


def test_the_store_loads_what_was_trained_and_keys_by_every_setting() -> None:
    first = train("alibi", seed=11, **BRIEF)  # type: ignore[arg-type]
    assert not first.report.from_store
    assert (store.lab_dir() / STORE_KIND).is_dir()
    again = train("alibi", seed=11, **BRIEF)  # type: ignore[arg-type]
    assert again.report.from_store
    assert again.report.heldout_loss == first.report.heldout_loss
    assert again.report.history == first.report.history
    prefixes = [[1, 0, 1], [0] * 30, []]
    assert np.array_equal(again.prob_one(prefixes), first.prob_one(prefixes))
    # Any change of setting trains anew; retrain ignores the stored model.
    assert not train("alibi", seed=11, lr=4e-3, **BRIEF).report.from_store  # type: ignore[arg-type]
    assert not train("alibi", seed=11, retrain=True, **BRIEF).report.from_store  # type: ignore[arg-type]


def test_save_false_writes_nothing() -> None:
    train("learned", seed=12, save=False, **BRIEF)  # type: ignore[arg-type]
    assert not train("learned", seed=12, save=False, **BRIEF).report.from_store  # type: ignore[arg-type]


def test_progress_counts_every_step() -> None:
    done: list[int] = []
    train("none", save=False, preset="quick", steps=30, threads=1, progress=done.append)
    assert sum(done) == 30


def test_threads_are_restored() -> None:
    before = torch.get_num_threads()
    with torch_threads(1) as n:
        assert n == 1
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(InputError, match="`threads`: must be an integer >= 1"), torch_threads(0):
        pass


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"pe": "xpos"}, "pe", "must be one of"),
        ({"attend_to": "both"}, "attend_to", "'states' or 'tokens'"),
        ({"preset": "huge"}, "preset", "must be one of"),
        ({"steps": -1}, "steps", ">= 0"),
        ({"lr": 0.0}, "lr", "positive number"),
        ({"seq_len": 3}, "seq_len", ">= 4"),
        ({"n_heads": 3}, "n_heads", "multiple of n_heads"),
        ({"dropout": 0.1}, "settings", "unknown settings"),
    ],
)
def test_bad_settings_name_the_field(kwargs: dict[str, object], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        train(save=False, threads=1, **{"preset": "quick", **kwargs})  # type: ignore[arg-type]
    assert caught.value.field == field


def test_settings_round_trip() -> None:
    settings = TrainSettings(pe="alibi", steps=7)
    assert TrainSettings.from_dict(settings.to_dict()) == settings
    assert settings.config().max_len == settings.seq_len


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("pe:", "must look like"),
        ("pe:xpos", "unknown encoding"),
        ("pe:rope:sideways", "unknown option"),
        ("lab:bits", "must look like"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        from_spec(spec)
