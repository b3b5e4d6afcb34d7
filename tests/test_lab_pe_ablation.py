"""The positional-encoding ablation: its tables, its verdicts against v2, the CLI command."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

from cotplan.cli import app, main  # noqa: E402
from cotplan.errors import InputError  # noqa: E402
from cotplan.research.lab.ablation import PEAblationResult, pe_ablation  # noqa: E402

#: Seconds: two tiny encodings plus the ordinary decoder (the quick preset), short evaluation.
SMALL = {
    "encodings": ("none", "learned"),
    "ts": (20, 40),
    "n_orderings": 60,
    "n_sequences": 10,
    "n_boot": 200,
    "threads": 1,
}


@pytest.fixture(scope="module")
def result() -> PEAblationResult:
    stages: list[tuple[str, int]] = []

    def stage(name: str, total: int) -> None:
        stages.append((name, total))

    out = pe_ablation("quick", stage=stage, **SMALL)  # type: ignore[arg-type]
    assert [name for name, _ in stages][:3] == ["train none", "orderings none", "martingale none"]
    return out


@pytest.mark.slow  # as is every test that uses `result`: its set-up trains six models
def test_one_model_per_encoding_plus_the_ordinary_decoder(result: PEAblationResult) -> None:
    assert result.labels == ("none", "learned", "none (ordinary decoder)")
    assert list(result.training["model"]) == list(result.labels)
    assert (result.training["heldout_loss"] < result.training["constant_loss"] - 0.05).all()
    table = result.to_frame()
    assert list(table["model"]) == list(result.labels)
    for column in ("variance_t20", "variance_t40", "v2_variance_t20", "gap_A", "gap_vs_none"):
        assert column in table.columns
    assert set(result.order["t"]) == {20, 40}
    assert len(result.order) == 6


def _variance(result: PEAblationResult, model: str, t: int, column: str = "variance") -> float:
    order = result.order
    return float(order.loc[(order["model"] == model) & (order["t"] == t), column].iloc[0])


@pytest.mark.slow
def test_order_variance_is_zero_only_without_position(result: PEAblationResult) -> None:
    for t in (20, 40):
        assert _variance(result, "none", t) < 1e-28
        assert _variance(result, "learned", t) > 1e-10
        # The causal mask alone: the ordinary decoder sees order with no encoding at all.
        assert _variance(result, "none (ordinary decoder)", t) > 1e-10
        assert _variance(result, "none", t, "bayes") == pytest.approx(0.5)
    assert _variance(result, "learned", 20, "v2_variance") == pytest.approx(1.2e-7)
    assert result.order["v2_variance"].isna().sum() == 3  # v2 has values at t = 20 only


@pytest.mark.slow
def test_versus_paper_rows(result: PEAblationResult) -> None:
    rows = result.versus_paper().set_index("claim")
    none = rows.loc["variance over orderings of P(1 | S_20 = 10), none"]
    assert none["verdict"] == "reproduced"
    assert "rounding, not order" in none["why"]
    ordinary = rows.loc["variance over orderings of P(1 | S_20 = 10), none (ordinary decoder)"]
    assert ordinary["verdict"] == "not reproduced"
    assert "causal" in ordinary["why"]
    gap_rows = [c for c in rows.index if "martingale gap" in c]
    assert len(gap_rows) == 2  # learned and the ordinary decoder, each against "none"
    ordinary_gap = rows.loc[
        "none (ordinary decoder): martingale gap above the exchangeable model's (none)"
    ]
    assert ordinary_gap["verdict"] == "not testable"  # no encoding: not a test of claim 1


@pytest.mark.slow
def test_the_martingale_fit_is_per_model_on_shared_sequences(result: PEAblationResult) -> None:
    fits = result.martingale.set_index("model")
    assert fits["vs_none"].isna().tolist() == [True, False, False]
    assert fits["ref_A"].nunique() == 1  # the same sequences for every model
    assert set(result.gaps["model"]) == set(result.labels)
    assert result.gaps["n"].max() == 64


@pytest.mark.slow
def test_save_writes_tables_and_a_chart(result: PEAblationResult, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cotplan import charts

    assert "pe_ablation.png" not in {p.name for p in result.save(tmp_path / "tables")}
    files = {p.name for p in charts.save(result, tmp_path)}
    assert {"pe_ablation.csv", "pe_order_variance.csv", "pe_ablation_vs_paper.csv"} <= files
    assert "pe_ablation.png" in files
    assert (tmp_path / "pe_ablation.png").stat().st_size > 1000


def test_a_second_run_loads_the_stored_models() -> None:
    again = pe_ablation("quick", **SMALL)  # type: ignore[arg-type]
    assert again.training["from_store"].all()


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"preset": "huge"}, "preset", "must be one of"),
        ({"encodings": ("xpos",)}, "encodings", "unknown"),
        ({"encodings": ()}, "encodings", "at least one"),
        ({"ts": (21,)}, "ts", "even"),
        ({"ts": (80,)}, "ts", "2..63"),
        ({"n_boot": 10}, "n_boot", ">= 100"),
    ],
)
def test_bad_arguments_name_the_field(kwargs: dict[str, object], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        pe_ablation(**{"preset": "quick", **kwargs})  # type: ignore[arg-type]
    assert caught.value.field == field


def test_the_cli_command(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "ablation"
    args = ["experiment", "pe-ablation", "--quick", "--encodings", "none,learned", "--no-ordinary"]
    # The fixture's settings (the quick preset, seed 0): the command loads its stored models.
    options = ["--threads", "1", "-o", str(out), "--no-charts"]
    result = CliRunner().invoke(app, [*args, *options])
    assert result.exit_code == 0, result.output
    assert "pe_ablation_vs_paper.csv" in {p.name for p in out.iterdir()}
    assert "Variance over orderings" in result.output
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--encodings", "xpos", "-o", str(out)])
    assert exit_info.value.code == 2
    assert "`encodings`: unknown ['xpos']" in capsys.readouterr().err


def test_the_cli_trains_with_other_steps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["experiment", "pe-ablation", "--quick", "--encodings", "none", "--no-ordinary"]
    options = ["--steps", "30", "--threads", "1", "-o", str(tmp_path), "--no-charts"]
    result = CliRunner().invoke(app, [*args, *options])
    assert result.exit_code == 0, result.output
    training = pd.read_csv(tmp_path / "pe_training.csv")
    assert training["steps"].tolist() == [30]
    assert not training["from_store"].any()


def test_a_lab_model_is_a_backend_for_the_experiment_commands(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "order"
    # The quick preset's "none" model, stored by the fixture: loaded, not trained.
    args = ["experiment", "order", "-b", "pe:none:quick", "--quick", "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--no-charts"])
    assert result.exit_code == 0, result.output
    assert "lab none" in result.output


#: Seconds per seed: one tiny encoding plus "none", 30 training steps, a short evaluation.
TINY_SEEDS = {
    "encodings": ("none", "rope"),
    "ordinary_none": False,
    "ts": (20,),
    "n_orderings": 40,
    "n_sequences": 4,
    "n_boot": 100,
    "threads": 1,
    "steps": 30,
}


def test_seeds_give_the_spread_across_training_seeds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cotplan.research.lab.ablation import pe_ablation_seeds

    spread = pe_ablation_seeds("quick", seeds=(0, 1, 2), **TINY_SEEDS)  # type: ignore[arg-type]
    assert spread.seeds == (0, 1, 2)
    table = spread.spread().set_index("model")
    rope = table.loc["rope"]
    per_seed = [rope[f"variance_seed{s}"] for s in (0, 1, 2)]
    assert len(set(per_seed)) == 3  # each seed trains its own model
    assert rope["min"] == min(per_seed)
    assert rope["max"] == max(per_seed)
    assert rope["fold"] == pytest.approx(max(per_seed) / min(per_seed))
    assert rope["v2_variance"] == pytest.approx(3.8e-7)
    assert table.loc["none", "max"] < 1e-28  # exchangeable by construction, every seed
    rows = spread.versus_paper().set_index("claim")
    rope_row = rows.loc["variance over orderings of P(1 | S_20 = 10), rope, 3 seeds"]
    assert rope_row["interval"] == _range(per_seed)  # the range over seeds
    # The verdict needs every seed: all agree, none agree, or the seeds decide (not testable).
    agree = [abs(math.log10(v / 3.8e-7)) <= 1 for v in per_seed]
    expected = (
        "reproduced" if all(agree) else "not reproduced" if not any(agree) else "not testable"
    )
    assert rope_row["verdict"] == expected
    files = {p.relative_to(tmp_path).as_posix() for p in spread.save(tmp_path)}
    assert {"pe_seeds_spread.csv", "pe_seeds_vs_paper.csv", "seed1/pe_ablation.csv"} <= files


def _range(values: list[float]) -> str:
    from cotplan.research.experiments import Interval

    return str(Interval(min(values), max(values)))


def test_seeds_must_be_distinct_and_at_least_two() -> None:
    from cotplan.research.lab.ablation import pe_ablation_seeds

    with pytest.raises(InputError, match="`seeds`: need at least 2 distinct"):
        pe_ablation_seeds("quick", seeds=(3, 3))


def test_the_cli_prints_the_spread_across_seeds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["experiment", "pe-ablation", "--quick", "--encodings", "none", "--no-ordinary"]
    options = ["--seeds", "2", "--steps", "30", "--threads", "1", "-o", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, *options, "--no-charts"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "across training seeds" in result.output
    spread = pd.read_csv(tmp_path / "pe_seeds_spread.csv")
    assert {"variance_seed0", "variance_seed1", "fold"} <= set(spread.columns)
    assert (tmp_path / "seed1" / "pe_training.csv").exists()
