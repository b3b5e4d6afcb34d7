"""A lab reasoning model: test the chain-of-thought length law where the mechanism is known.

A small transformer, trained on CPU in minutes, answers task families of size n whose
reasoning trace is fixed (three tokens per input) and necessary (parity, sums, cups, the
paper's next bit of n exchangeable bits, and the lamp, where every step helps a little); an
over-thinker answers parity and then goes on checking, so a cap has something to save.
Behind cotplan's `Backend` interface it runs `budgeted_answer`, `calibrate`, `BudgetPlanner`
and the benchmarks unchanged, so the planner's fitted constants can be held against ground
truth.

- `tasks`: the families (`make_lab_tasks`, `solve`, `blind_error`, `mechanism_error`: the
  exact error-versus-k reference curve); `tokenizer`: their words;
- `data` and `train`: training sequences and `load_or_train` (shipped weights, else the user
  folder, else trained now); `shipped`: the weights that ship with cotplan;
- `logloss`: `logloss_study`, the length law on the paper's terms (B(k), relative ε, domain);
- `backend`: `LabBackend`, also ``cotplan.connect("lab:parity")``;
- `study`: `reasoning_study`: the error grid, the planner's fit, which law holds, the oracle
  per-item budget and held-out policies.

Importing this package does not import torch; training and the backend's model do.
"""

from __future__ import annotations

from cotplan.research.lab.reasoning.backend import LabBackend, encode_prompt, lab_backend
from cotplan.research.lab.reasoning.logloss import LogLossStudy, in_domain, logloss_study
from cotplan.research.lab.reasoning.shipped import StaleWeightsWarning, ship, shipped_weights
from cotplan.research.lab.reasoning.study import (
    STUDY_PRESETS,
    LabStudy,
    StudySettings,
    lab_report_rows,
    reasoning_study,
    study_report_rows,
)
from cotplan.research.lab.reasoning.tasks import (
    LabFamilyInfo,
    blind_error,
    get_lab_family,
    lab_families,
    make_lab_tasks,
    mechanism_error,
    solve,
)
from cotplan.research.lab.reasoning.tokenizer import LabTokenizer
from cotplan.research.lab.reasoning.train import (
    PRESETS,
    LabReasoningModel,
    TrainSettings,
    load_or_train,
    train_lab_model,
)

__all__ = [
    "PRESETS",
    "STUDY_PRESETS",
    "LabBackend",
    "LabFamilyInfo",
    "LabReasoningModel",
    "LabStudy",
    "LabTokenizer",
    "LogLossStudy",
    "StaleWeightsWarning",
    "StudySettings",
    "TrainSettings",
    "blind_error",
    "encode_prompt",
    "get_lab_family",
    "in_domain",
    "lab_backend",
    "lab_families",
    "lab_report_rows",
    "load_or_train",
    "logloss_study",
    "make_lab_tasks",
    "mechanism_error",
    "reasoning_study",
    "ship",
    "shipped_weights",
    "solve",
    "study_report_rows",
    "train_lab_model",
]
