"""Weights that ship: every shipped file fits today's settings and its checksum, a stale or
damaged file is detected, loading needs no training, and training itself still works (on a
model small enough to train in seconds)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from cotplan.errors import ModelFileError  # noqa: E402
from cotplan.research.lab.reasoning.shipped import (  # noqa: E402
    StaleWeightsWarning,
    ship,
    shipped_dir,
    shipped_state,
    shipped_weights,
)
from cotplan.research.lab.reasoning.train import (  # noqa: E402
    TrainSettings,
    load_or_train,
    settings_for,
)
from cotplan.research.lab.store import model_key  # noqa: E402

RECORDS = sorted(shipped_dir().glob("*.json"))
#: What the tests, the demo and `connect("lab:...")` load instead of training.
MUST_SHIP = {("lab-parity", "tiny"), ("lab-parity-overthink", "tiny"), ("lab-lamp", "tiny")}
#: The largest size a shipped model is known to solve, where that is below its trained sizes:
#: the wide lamp (trained on 1-64) writes its trace exactly only up to n = 32.
LEARNED_UP_TO = {("lab-lamp", "wide"): 32}


def test_the_presets_tests_and_the_demo_use_ship() -> None:
    shipped = {(json.loads(p.read_text())["family"], json.loads(p.read_text())["preset"])
               for p in RECORDS}  # fmt: skip
    assert shipped >= MUST_SHIP


@pytest.mark.parametrize("record", RECORDS, ids=[p.stem for p in RECORDS])
def test_every_shipped_file_fits_todays_settings_and_its_checksum(record: Path) -> None:
    data = json.loads(record.read_text())
    settings = settings_for(data["family"], data["preset"])
    # A change to the training settings, the data format or the vocabulary changes the key:
    # retrain and export (`cotplan kstar-lab train FAMILY --preset P --export <weights folder>`).
    assert data["key"] == model_key(settings.to_dict()), "stale shipped weights"
    assert record.with_suffix(".pt").stat().st_size < 1_000_000
    state, meta = shipped_state(settings, data["preset"]) or ({}, {})
    assert state
    assert meta == data["meta"]
    top = LEARNED_UP_TO.get((data["family"], data["preset"]), settings.n_max)
    solved = [a for n, a in meta["accuracy_full_trace"].items() if int(n) <= top]
    assert solved
    assert min(solved) >= 0.85
    exact = [e for n, e in meta.get("trace_exact", {}).items() if int(n) <= top]
    assert all(e >= 0.85 for e in exact)


def test_the_wide_lamp_writes_its_trace_where_its_record_says() -> None:
    from cotplan.research.lab.reasoning.train import one_thread

    model = load_or_train("lamp", "wide")
    with one_thread():
        accuracy, exact = model.check(32, count=6)
    assert accuracy == 1.0
    assert exact == 1.0


def test_the_long_lamp_writes_its_trace_at_n_64() -> None:
    from cotplan.research.lab.reasoning.train import one_thread

    model = load_or_train("lamp", "long")
    assert model.settings.n_max == 64
    with one_thread():
        assert model.first_wrong_steps(64, count=3) == [None, None, None]
        assert model.check(64, count=3) == (1.0, 1.0)


def test_the_long_lamps_stages_move_their_sizes_up_then_mix_them_back() -> None:
    chain, preset = [], "long"
    while preset:
        settings = settings_for("lamp", preset)
        chain.append((preset, settings.n_min, settings.n_max))
        preset = settings.init
    assert chain == [("long", 1, 64), ("wide-top", 49, 64), ("wide-late", 33, 64),
                     ("wide", 1, 64), ("standard", 1, 16)]  # fmt: skip


def test_a_shipped_preset_loads_without_training(monkeypatch: pytest.MonkeyPatch) -> None:
    import cotplan.research.lab.reasoning.train as train_module

    def no_training(*args: object, **kwargs: object) -> None:
        raise AssertionError("the shipped weights should have been loaded, not trained")

    monkeypatch.setattr(train_module, "train_lab_model", no_training)
    model = load_or_train("parity", "tiny")
    record = shipped_weights("lab-parity", "tiny")
    assert record is not None
    assert model.meta == record.meta
    assert model.key == record.key


def _copy(tmp_path: Path, family: str, preset: str) -> Path:
    for suffix in (".json", ".pt"):
        shutil.copy(shipped_dir() / f"{family}-{preset}{suffix}", tmp_path)
    return tmp_path


def test_a_stale_file_is_not_used_and_says_why(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "lab-parity", "tiny")
    record = folder / "lab-parity-tiny.json"
    data = json.loads(record.read_text())
    data["key"] = "0" * 16  # trained under another data format or vocabulary
    record.write_text(json.dumps(data))
    with pytest.warns(StaleWeightsWarning, match="other settings"):
        assert shipped_state(settings_for("parity", "tiny"), "tiny", folder) is None


def test_a_damaged_file_fails_its_checksum(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "lab-parity", "tiny")
    weights = folder / "lab-parity-tiny.pt"
    blob = bytearray(weights.read_bytes())
    blob[-10] ^= 0xFF
    weights.write_bytes(bytes(blob))
    with pytest.raises(ModelFileError, match="checksum"):
        shipped_state(settings_for("parity", "tiny"), "tiny", folder)


def test_ship_writes_a_pair_that_loads_back(tmp_path: Path) -> None:
    model = load_or_train("parity", "tiny")
    path = ship(model, "tiny", tmp_path)
    assert path.name == "lab-parity-tiny.pt"
    state, meta = shipped_state(model.settings, "tiny", tmp_path) or ({}, {})
    assert meta == model.meta
    for name, tensor in model.network.state_dict().items():
        assert torch.equal(tensor, state[name])
    with pytest.raises(Exception, match="preset"):
        ship(model, "standard", tmp_path)


def test_training_lowers_the_loss_and_the_user_folder_keeps_the_model() -> None:
    """The one test that trains: a model small enough for seconds (not a shipped preset)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        settings = TrainSettings(
            family="parity", n_min=2, n_max=3, steps=80, batch_size=16, warmup=10, lr=1e-2,
            d_model=16, n_heads=2, d_ff=32,
        )  # fmt: skip
        losses: list[float] = []
        model = load_or_train(
            "parity", settings, progress=lambda step, loss: losses.append(loss), check_sizes=[2]
        )
        assert len(losses) >= 3
        # From about ln(vocabulary) = 6 nats to well under half of it.
        assert losses[-1] < 0.5 * losses[0]
        assert model.meta["train_seconds"] > 0
        again = load_or_train("parity", settings)  # from the user folder, not trained again
        assert again.meta == model.meta
        for name, tensor in model.network.state_dict().items():
            assert torch.equal(tensor, again.network.state_dict()[name])
    finally:
        torch.set_num_threads(threads)


def test_the_cli_lists_the_shipped_weights() -> None:
    from typer.testing import CliRunner

    from cotplan.cli.lab_reasoning import app

    result = CliRunner().invoke(app, ["weights"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.output.count("lab-") >= len(RECORDS)
    assert "stale" not in result.output
    # Readable cells, not a dict's repr.
    assert "n = 16: " in result.output
    assert "{'" not in result.output


def test_curriculum_settings_leave_older_keys_alone() -> None:
    import numpy as np

    from cotplan.errors import InputError
    from cotplan.research.lab.reasoning.data import Mix, make_batch
    from cotplan.research.lab.reasoning.settings import settings_for
    from cotplan.research.lab.reasoning.tokenizer import REASONING, default_tokenizer

    standard = settings_for("lamp", "standard").to_dict()
    assert "init" not in standard
    assert "bucket" not in standard
    wide = settings_for("lamp", "wide").to_dict()
    assert wide["init"] == "standard"
    assert wide["bucket"] is True
    with pytest.raises(InputError, match="unknown preset 'nope'"):
        settings_for("lamp", "standard").replace(init="nope")

    tokenizer = default_tokenizer()
    label_ids = np.array([i for w, i in tokenizer.ids.items() if w.startswith("[")])
    marker = tokenizer.ids[REASONING]

    def question_sizes(one_size: bool) -> set[int]:
        rng = np.random.default_rng(0)
        ids, _ = make_batch(
            "lab-lamp",
            rng,
            32,
            sizes=list(range(1, 65)),
            mix=Mix(1, 0, 0),
            tokenizer=tokenizer,
            one_size=one_size,
        )
        return {int(np.isin(row[: list(row).index(marker)], label_ids).sum()) for row in ids}

    assert len(question_sizes(True)) == 1  # one size per batch
    assert len(question_sizes(False)) > 1
