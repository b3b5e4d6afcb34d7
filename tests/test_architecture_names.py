"""Renamed modules and classes: the new names, and the old aliases gone (CHANGELOG.md)."""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("torch")


def test_the_pe_trainers_old_module_name_is_gone() -> None:
    # `cotplan.research.lab.bernoulli` was an alias of `cotplan.research.lab.pe_trainer` in 0.1
    # (CHANGELOG.md).
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("cotplan.research.lab.bernoulli")


def test_the_two_training_settings_have_two_names() -> None:
    import cotplan.research.lab
    from cotplan.research.lab.reasoning.settings import TrainSettings as ReasoningSettings

    assert cotplan.research.lab.PETrainSettings is cotplan.research.lab.TrainSettings
    assert cotplan.research.lab.PETrainSettings is not ReasoningSettings
    assert cotplan.research.lab.PETrainSettings.__name__ == "PETrainSettings"
