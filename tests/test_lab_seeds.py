"""Seeded lab models (issue 32, "3 seeds"): `--seed` on `cotplan kstar-lab train/law/study`
trains and reads a model of another training seed, stored under its own key, and every
curriculum stage it starts from has that seed too; seed 0 stays the shipped model, key for key.

Only one test trains (the tiny preset, seconds); the long lamp's curriculum is checked by what
each stage asks for, never by training it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cotplan.cli import main
from cotplan.research.lab.reasoning.settings import settings_for
from cotplan.research.lab.reasoning.shipped import shipped_weights
from cotplan.research.lab.store import model_key

#: The store keys of the seed-0 presets as they were before seeds could be chosen (the shipped
#: records carry the same for the presets that ship): seed 0 must keep finding these.
SEED_0_KEYS = {
    ("lamp", "long"): "ae39a88c3497b19d",
    ("lamp", "wide-top"): "3d393906422ddff8",
    ("lamp", "wide-late"): "cad8ae052fa5e1b2",
    ("lamp", "wide"): "9fd607ba0e7920d4",
    ("lamp", "standard"): "fce86fd8f1ad1c27",
    ("parity", "tiny"): "b02a73d0b0f1a95c",
}


class Refused(BaseException):
    """A bad seed reached training or a model load (a BaseException: nothing swallows it)."""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user folder: nothing another test trained or stored is found."""
    folder = tmp_path / "home"
    monkeypatch.setenv("COTPLAN_HOME", str(folder))
    return folder


@pytest.fixture
def one_thread() -> Iterator[None]:
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize(("family", "preset"), sorted(SEED_0_KEYS))
def test_seed_0_keeps_the_keys_of_before(family: str, preset: str) -> None:
    key = SEED_0_KEYS[family, preset]
    assert model_key(settings_for(family, preset).to_dict()) == key
    assert model_key(settings_for(family, preset, seed=0).to_dict()) == key
    assert settings_for(family, preset, seed=0) == settings_for(family, preset)
    record = shipped_weights(f"lab-{family}", preset)
    if record is not None:
        assert record.key == key


def test_another_seed_gets_another_key_for_every_stage() -> None:
    for family, preset in SEED_0_KEYS:
        seeded = settings_for(family, preset, seed=1)
        assert seeded.seed == 1
        assert seeded.replace(seed=0) == settings_for(family, preset)
        key = model_key(seeded.to_dict())
        assert key != SEED_0_KEYS[family, preset]
        assert key != model_key(settings_for(family, preset, seed=2).to_dict())
    # Settings passed whole keep their own seed unless one is asked for.
    custom = settings_for("lamp", "tiny", seed=3)
    assert settings_for("lamp", custom).seed == 3
    assert settings_for("lamp", custom, seed=4).seed == 4


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_a_bad_seed_in_the_library_names_seed(bad: Any) -> None:
    from cotplan.errors import InputError

    with pytest.raises(InputError, match="seed") as info:
        settings_for("lamp", "long", seed=bad)
    assert info.value.field == "seed"


@pytest.mark.torch
def test_the_curriculum_asks_every_start_stage_for_the_same_seed(
    one_thread: None, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cotplan.research.lab.reasoning.train as train_module

    asked: list[tuple[str, str, int | None]] = []

    def start_stage(family: str, preset: str, **options: Any) -> None:
        asked.append((family, preset, options.get("seed")))
        raise Refused

    monkeypatch.setattr(train_module, "load_or_train", start_stage)
    chain = ["long", "wide-top", "wide-late", "wide"]
    for seed in (0, 1):
        for preset in chain:
            with pytest.raises(Refused):
                train_module.train_lab_model(settings_for("lamp", preset, seed=seed))
    starts = ["wide-top", "wide-late", "wide", "standard"]
    assert asked == [("lab-lamp", p, s) for s in (0, 1) for p in starts]


@pytest.mark.torch
def test_seed_1_never_loads_the_shipped_weights(
    one_thread: None, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cotplan.research.lab.reasoning.train as train_module

    trained: list[int] = []

    def no_training(settings: Any, **options: Any) -> None:
        trained.append(settings.seed)
        raise Refused

    monkeypatch.setattr(train_module, "train_lab_model", no_training)
    # Seed 0 loads the shipped long lamp (no training); seed 1 finds none of its own and would
    # train (the shipped file is not a stale seed-1 model either: no warning).
    assert train_module.load_or_train("lamp", "long").key == SEED_0_KEYS["lamp", "long"]
    with pytest.raises(Refused):
        train_module.load_or_train("lamp", "long", seed=1)
    assert trained == [1]


@pytest.mark.torch
def test_the_cli_passes_the_seed_to_law_train_and_study(
    one_thread: None, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cotplan.research.lab.reasoning.train as train_module
    from cotplan.research.lab.reasoning.backend import LabBackend

    asked: list[tuple[str, Any, Any]] = []

    def backend(cls: type, family: str, preset: Any = "standard", **options: Any) -> None:
        asked.append(("law", preset, options.get("seed")))
        raise Refused

    def load(family: str, preset: Any = "standard", **options: Any) -> None:
        asked.append(("train", preset, options.get("seed")))
        raise Refused

    monkeypatch.setattr(LabBackend, "for_family", classmethod(backend))
    monkeypatch.setattr(train_module, "load_or_train", load)
    law = ["kstar-lab", "law", "lamp", "--preset", "long", "--sizes", "16,64", "--eps", "0.5"]
    study = ["kstar-lab", "study", "parity", "--preset", "tiny", "--out", str(home / "study")]
    for argv in (
        [*law, "--seed", "1"],
        law,
        ["kstar-lab", "train", "lamp", "--preset", "long", "--seed", "2"],
        [*study, "--seed", "3"],
    ):
        with pytest.raises(Refused):
            main(argv)
    assert asked[:3] == [("law", "long", 1), ("law", "long", 0), ("train", "long", 2)]
    # The study hands its model's settings over whole, the seed in them.
    assert asked[3][1] == settings_for("parity", "tiny", seed=3)


@pytest.mark.parametrize(
    "argv",
    [
        ["kstar-lab", "train", "lamp", "--preset", "long", "--seed", "-1"],
        ["kstar-lab", "law", "lamp", "--preset", "long", "--seed", "-1"],
        ["kstar-lab", "study", "parity", "--preset", "tiny", "--seed", "-1"],
        ["kstar-lab", "train", "parity", "--preset", "tiny", "--seed", "1", "--export", "w"],
    ],
)
def test_a_bad_seed_is_one_error_naming_seed(
    argv: list[str], home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(home.parent)  # where `--export w` would land
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("error: `seed`"), err
    assert not home.exists() or not any(home.rglob("*.pt"))
    assert not (home.parent / "w").exists()


def test_a_seed_that_is_not_a_number_is_refused_before_torch_is_imported(
    tmp_path: Path,
) -> None:
    # A fresh process: this one may have imported torch already.
    script = (
        "import sys\n"
        "from cotplan.cli import main\n"
        "for argv in (['kstar-lab', 'train', 'lamp', '--preset', 'long', '--seed', 'x'],\n"
        "             ['kstar-lab', 'law', 'lamp', '--preset', 'long', '--seed', '-1']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as exc:\n"
        "        print('exit', exc.code)\n"
        "print('torch' in sys.modules)\n"
    )
    env = {**os.environ, "COTPLAN_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.stdout.split() == ["exit", "2", "exit", "2", "False"], done.stderr
    err = " ".join(done.stderr.split())
    assert "'--seed'" in err
    assert "error: `seed`: must be an integer >= 0, got -1" in err


@pytest.mark.slow
@pytest.mark.torch
def test_seed_1_of_the_tiny_preset_is_its_own_model_stored_apart(
    one_thread: None, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from typer.testing import CliRunner

    import cotplan.research.lab.reasoning.train as train_module
    from cotplan.cli.lab_reasoning import app
    from cotplan.research.lab import store
    from cotplan.research.lab.reasoning.backend import LabBackend
    from cotplan.research.lab.reasoning.shipped import shipped_state

    assert train_module.is_trained("parity", "tiny")  # the shipped seed 0
    assert not train_module.is_trained("parity", "tiny", seed=1)
    argv = ["train", "parity", "--preset", "tiny", "--seed", "1", "--check-sizes", "3"]
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert train_module.is_trained("parity", "tiny", seed=1)
    assert result.exit_code == 0, result.output
    seed_1_key = model_key(settings_for("parity", "tiny", seed=1).to_dict())
    assert f"({seed_1_key[:12]})" in result.output
    assert [p.name for p in (store.lab_dir() / "reasoning").iterdir()] == [seed_1_key]

    def no_training(*args: object, **kwargs: object) -> None:
        raise AssertionError("both models should have been loaded, not trained")

    monkeypatch.setattr(train_module, "train_lab_model", no_training)
    seed_0 = LabBackend.for_family("parity", "tiny")
    seed_1 = LabBackend.for_family("parity", "tiny", seed=1)
    assert seed_0.lab.key == SEED_0_KEYS["parity", "tiny"]  # still the shipped file
    assert seed_1.lab.key == seed_1_key
    assert seed_1.lab.settings.seed == 1
    assert seed_0.model == f"lab-parity@{SEED_0_KEYS['parity', 'tiny'][:12]}"
    assert seed_1.model == f"lab-parity@{seed_1_key[:12]}"
    state_0, state_1 = seed_0.lab.network.state_dict(), seed_1.lab.network.state_dict()
    assert any(not torch.equal(state_0[name], state_1[name]) for name in state_0)
    assert shipped_state(settings_for("parity", "tiny"), "tiny") is not None
