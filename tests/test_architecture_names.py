"""Renamed modules and classes stay importable under their old names."""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("torch")


def test_the_pe_trainer_keeps_its_old_module_name() -> None:
    new = importlib.import_module("cotplan.lab.pe_trainer")
    old = importlib.import_module("cotplan.lab.bernoulli")
    assert old is new
    assert old._store_settings is new._store_settings  # private names too
    from cotplan.lab.bernoulli import TrainSettings, train

    assert train is new.train
    assert TrainSettings is new.PETrainSettings


def test_the_two_training_settings_have_two_names() -> None:
    import cotplan.lab
    from cotplan.lab.reasoning.settings import TrainSettings as ReasoningSettings

    assert cotplan.lab.PETrainSettings is cotplan.lab.TrainSettings
    assert cotplan.lab.PETrainSettings is not ReasoningSettings
    assert cotplan.lab.PETrainSettings.__name__ == "PETrainSettings"
