"""The lab reasoning model: runs cotplan's budgeted answers, calibration and planner
unchanged, and its accuracy rises with the budget; the over-thinker goes on past the answer,
and the lamp's B(k) is measured on the paper's terms.

The tiny models (the "tiny" preset: n = 2..5, 600 steps) ship with cotplan and are loaded, not
trained (tests/test_lab_reasoning_shipped.py trains the one model whose purpose is training).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cotplan.backends import connect  # noqa: E402
from cotplan.errors import InputError  # noqa: E402
from cotplan.generate import budgeted_answer  # noqa: E402
from cotplan.planner import BudgetPlanner  # noqa: E402
from cotplan.planner.calibrate import CostUnknownWarning, calibrate  # noqa: E402
from cotplan.research.experiments.verdicts import ReportRow  # noqa: E402
from cotplan.research.lab.reasoning import (  # noqa: E402
    LabBackend,
    load_or_train,
    make_lab_tasks,
    reasoning_study,
    solve,
)
from cotplan.research.lab.reasoning.study import LabStudy  # noqa: E402


@pytest.fixture(scope="module")
def backend() -> Iterator[LabBackend]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield LabBackend(load_or_train("parity", "tiny"))
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def study(backend: LabBackend) -> LabStudy:
    return reasoning_study("parity", "tiny", backend=backend)


def test_the_tiny_model_trains_and_writes_full_traces(backend: LabBackend) -> None:
    meta = backend.lab.meta
    assert backend.lab.accuracy(4, count=16) >= 0.9
    # The trace itself is right token for token, not just the answer.
    accuracy, exact = backend.lab.check(4, count=16)
    assert exact >= 0.9
    assert exact <= accuracy + 0.1
    assert backend.lab.check(4, count=4, reason=False)[1] == 0
    # The first wrong step is None exactly for the items `check` counts as exact.
    steps = backend.lab.first_wrong_steps(4, count=16)
    assert sum(s is None for s in steps) / 16 == exact
    assert all(s is None or 1 <= s <= 4 for s in steps)
    # Recorded, not asserted: the time depends on the machine's load (benchmarks measure speed).
    assert meta["train_seconds"] > 0
    assert min(meta["accuracy_full_trace"].values()) >= 0.9
    # Without a trace, parity of 5 bits is close to a coin flip for this model.
    assert meta["accuracy_no_reasoning"]["5"] < 0.8


def test_the_second_load_gives_the_same_weights(backend: LabBackend) -> None:
    again = load_or_train("parity", "tiny")
    assert again.meta == backend.lab.meta
    for name, tensor in backend.lab.network.state_dict().items():
        assert torch.equal(tensor, again.network.state_dict()[name])


def test_budgeted_answer_runs_unchanged_in_each_phase(backend: LabBackend) -> None:
    item = make_lab_tasks("parity", n=5, count=1, seed=4)[0]
    direct = budgeted_answer(backend, item, 0)
    assert (direct.calls, direct.reasoning_tokens, direct.forced) == (1, 0, False)
    cut = budgeted_answer(backend, item, 4)
    assert cut.mode == "chat"
    assert (cut.calls, cut.reasoning_tokens, cut.truncated, cut.forced) == (2, 4, True, True)
    assert cut.reasoning.split() == list(solve(str(item.prompt)).trace[:4])
    full = budgeted_answer(backend, item, 3 * 5 + 3)
    assert (full.calls, full.forced, full.correct) == (1, False, True)
    assert full.reasoning_tokens == 3 * 5 + 2
    # Priced at the lab's deliberate local zero: exactly 0, with no "no price" note (an unknown
    # price would be NaN with a note).
    assert full.cost_note == ""
    assert full.cost_usd == 0.0


def test_greedy_runs_cut_from_a_longer_run_equal_fresh_ones(backend: LabBackend) -> None:
    prompt = str(make_lab_tasks("parity", n=4, count=1, seed=9)[0].prompt)
    long = backend.generate(prompt, max_tokens=30, logprobs=3)
    short = backend.generate(prompt, max_tokens=5)
    fresh = LabBackend(backend.lab, remember=0).generate(prompt, max_tokens=5)
    assert short.text == fresh.text
    assert long.text.startswith(short.text)
    assert short.from_cache
    assert not fresh.from_cache
    assert (short.finish_reason, long.finish_reason) == ("length", "stop")
    assert long.logprobs is not None
    assert "".join(t.token for t in long.logprobs) == long.text
    assert all(len(t.top) <= 3 for t in long.logprobs)
    assert long.usage.completion_tokens == backend.count_tokens(long.text) == 3 * 4 + 2


def test_stop_strings_end_the_text_before_them(backend: LabBackend) -> None:
    prompt = str(make_lab_tasks("parity", n=3, count=1)[0].prompt)
    out = backend.generate(prompt, max_tokens=30, stop=["Answer:"])
    assert "Answer" not in out.text
    assert out.finish_reason == "stop"
    assert out.usage.completion_tokens == 3 * 3 + 1


def test_sampling_is_seeded(backend: LabBackend) -> None:
    prompt = str(make_lab_tasks("parity", n=5, count=1)[0].prompt)
    a = backend.generate(prompt, max_tokens=20, temperature=1.5, seed=3)
    b = backend.generate(prompt, max_tokens=20, temperature=1.5, seed=3)
    assert a.text == b.text


def test_next_token_probs_of_the_answer(backend: LabBackend) -> None:
    item = make_lab_tasks("parity", n=3, count=1)[0]
    trace = " ".join(solve(str(item.prompt)).trace)
    probs = backend.next_token_probs(f"{item.prompt} Reasoning: {trace} Answer:", ["0", "1"])
    assert sum(probs.probs.values()) == pytest.approx(1.0)
    assert probs.probs[item.answer] > 0.9
    with pytest.raises(InputError, match="not one lab token"):
        backend.next_token_probs(str(item.prompt), ["maybe"])
    with pytest.raises(InputError, match="no provider request fields"):
        backend.generate(str(item.prompt), max_tokens=1, extra={"reasoning_effort": "low"})


def test_threads_get_the_same_answers_as_one_caller(backend: LabBackend) -> None:
    items = make_lab_tasks("parity", n=4, count=8, seed=5)
    serial = [budgeted_answer(backend, it, 7).extracted for it in items]
    threaded = backend.map(lambda it: budgeted_answer(backend, it, 7).extracted, items,
                           concurrency=4)  # fmt: skip
    assert threaded == serial


def test_accuracy_rises_with_the_budget_on_a_small_n(backend: LabBackend) -> None:
    items = make_lab_tasks("parity", n=5, count=16, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CostUnknownWarning)
        cal = calibrate(backend, items, [0, 6, 12, 17, 18], progress=False)
    accuracy = cal.accuracy().loc[5]
    assert accuracy[18] >= 0.9
    assert accuracy[0] <= 0.75
    assert accuracy[18] - accuracy[0] >= 0.25
    planner = BudgetPlanner(n_bootstrap=0).fit(cal.frame)
    assert planner.status_ == "helps"
    assert planner.trend_.p_value < 0.01


def test_the_planner_recovers_a_budget_that_meets_eps_on_held_out_items(study: LabStudy) -> None:
    plan = study.plan.set_index("n")
    for n, row in plan.iterrows():
        # Parity is decided only once the last bit is copied into the trace (3n − 1 tokens).
        assert row["tokens"] >= 3 * int(n) - 1, n
        assert row["heldout_items"] >= 4
        assert row["heldout_error"] <= study.settings.eps
    planned = study.heldout.set_index("policy").loc["planned k* (ε = 0.1)"]
    assert planned["accuracy"] >= 0.9


def test_the_study_reports_the_grid_the_law_and_the_oracle(study: LabStudy) -> None:
    grid = study.to_frame()
    assert list(grid.columns[:5]) == ["n", "k", "answers", "wrong", "error"]
    full = grid.loc[grid.groupby("n")["k"].idxmax()]
    assert (full["error"] <= 0.1).all()
    assert (grid[grid["k"] < 3 * grid["n"]]["blind"] == 0.5).all()
    assert "k*(n) grows as n^" in study.law
    assert "tokens per input" in study.law
    assert set(study.laws["law"]) == {"free α", "α = 1/2 (√n)", "α = 1 (linear)"}
    assert {"oracle_k", "stable_k"} <= set(study.oracle_frame().columns)
    oracle = study.heldout.set_index("policy").loc["oracle (per item)"]
    uncapped = study.heldout.set_index("policy").loc["uncapped (3n + 8)"]
    assert oracle["accuracy"] >= uncapped["accuracy"]
    assert oracle["reasoning_tokens"] < uncapped["reasoning_tokens"]
    rows = study.report_rows()
    assert rows
    assert all(isinstance(r, ReportRow) and r.experiment == "cot-lab" for r in rows)


def test_connect_builds_a_lab_backend(backend: LabBackend) -> None:
    with connect("lab:parity", preset="tiny") as model:
        assert isinstance(model, LabBackend)
        assert model.model == backend.model
        assert model.model.startswith("lab-parity@")
    with pytest.raises(InputError, match="unknown lab family"):
        connect("lab:parrot", preset="tiny")
    with pytest.raises(InputError, match="unknown option"):
        connect("lab:parity", preset="tiny", temperature=1.0)


def test_the_cli_study_prints_and_writes_its_tables(backend: LabBackend, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cotplan.cli.lab_reasoning import app

    result = CliRunner().invoke(
        app, ["study", "parity", "--preset", "tiny", "--out", str(tmp_path), "--no-charts"]
    )
    assert result.exit_code == 0, result.output
    assert "law:" in result.output
    for name in ("grid.csv", "constants.csv", "law.csv", "oracle.csv", "heldout.csv"):
        assert (tmp_path / "lab-parity" / name).stat().st_size > 0
    assert (tmp_path / "report.csv").exists()


def test_the_over_thinker_spends_twice_the_tokens_it_needs_and_a_cap_keeps_its_answers() -> None:
    with connect("lab:parity-overthink", preset="tiny") as model:
        items = make_lab_tasks("parity-overthink", n=4, count=12, seed=3)
        needed = 3 * 4 + 2
        uncapped = [budgeted_answer(model, it, 200) for it in items]
        # A cap a few tokens into the check pass (the tiny model answers less surely when cut
        # exactly where the check begins; the standard one does not need the margin).
        cap = needed + 3
        capped = [budgeted_answer(model, it, cap) for it in items]
        assert all("Check:" in a.reasoning for a in uncapped)
        mean_tokens = np.mean([a.reasoning_tokens for a in uncapped])
        assert mean_tokens >= 2 * needed
        assert np.mean([a.reasoning_tokens for a in capped]) <= cap
        # Cut after the answer is settled, it answers as well as uncapped (one slip allowed).
        assert sum(a.correct for a in capped) >= sum(a.correct for a in uncapped) - 1


def test_the_logloss_study_measures_b_of_k_on_the_lamp(tmp_path: Path) -> None:
    from cotplan.research.lab.reasoning.logloss import logloss_study

    with connect("lab:lamp", preset="tiny") as model:
        study = logloss_study(model, sizes=[4, 5], items=24, n_bootstrap=30)
        with pytest.raises(InputError, match="outside the sizes"):
            logloss_study(model, sizes=[9])
    curve = study.to_frame()
    assert {"B", "B_low", "B_high", "B_gap", "error", "mechanism"} <= set(curve.columns)
    for _, group in curve.groupby("n"):
        ordered = group.sort_values("k")
        # Reasoning helps on the log-loss: B(full trace) well below B(0).
        assert ordered["B"].iloc[-1] < ordered["B"].iloc[0] - 0.1
        assert ordered["B_gap"].iloc[0] == pytest.approx(1.0)
        assert ordered["B_gap"].iloc[-1] == pytest.approx(0.0)
        assert (ordered["B_low"] <= ordered["B"] + 1e-9).all()
    budgets = study.budgets
    assert set(budgets["measure"]) == {"B", "error"}
    assert not budgets["in_domain"].any()  # n < 16: the theorem's domain is empty
    assert "inside the theorem's domain: none" in study.verdict()
    assert study.premise_text() in study.verdict()
    assert set(study.premise["n"]) == {4, 5}
    # Both readings of k* are there wherever the curve has a relative gap to read.
    assert (budgets["k_robust"].isna() == budgets["k"].isna()).all()
    assert (study.exponents["sizes_in_domain"] == 0).all()
    # Form in ε: a smaller target never needs fewer tokens, and log(1/ε) predicts more.
    form = study.eps_form.dropna(subset=["ratio"])
    assert not form.empty
    assert (form["ratio"] >= 1).all()
    assert (form["predicted"] > 1).all()
    assert not form["in_domain"].any()
    written = study.save(tmp_path)
    assert all(p.stat().st_size > 0 for p in written)


def test_the_cli_law_command_prints_the_law(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cotplan.cli.lab_reasoning import app

    argv = ["law", "lamp", "--preset", "tiny", "--sizes", "3,5", "--items", "8",
            "--bootstrap", "20", "--out", str(tmp_path)]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert "law:" in result.output
    assert "k*(n, ε) on B" in result.output
    assert "n = 3: empty" in " ".join(result.output.split())  # rich wraps long lines
    words = " ".join(result.output.split())
    assert "the theorem's premise: B falls fastest first" in words
    assert "robust (k_robust: its running median of three budgets does)" in words
    assert (tmp_path / "logloss_curve.csv").stat().st_size > 0


def test_the_studys_own_check_is_labelled_as_a_cotplan_check(study: LabStudy) -> None:
    from cotplan.research.lab.reasoning.report import heldout_check, study_report_rows

    rows = study_report_rows([study])
    check = [row for row in rows if row.claim.startswith("planned k* meets")]
    assert len(check) == 1
    # Met only when every size's Wilson interval lies at or below ε; None when they cannot tell.
    met, _ = heldout_check(study.plan, study.settings.eps)
    assert (check[0].verdict, check[0].holds) == ("cotplan check", met)
    # The claims of the paper keep the paper's vocabulary.
    assert all(row.verdict != "cotplan check" for row in rows if row is not check[0])
