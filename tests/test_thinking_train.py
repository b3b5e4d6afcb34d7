"""Training the thinking adapter on CPU, end to end and tiny: a few steps from the served GGUF,
exported as a llama.cpp adapter that the real server loads and applies."""

from __future__ import annotations

from pathlib import Path

import pytest

from cotplan.backends.local import LocalModel
from cotplan.thinking.data import ThinkingSettings
from cotplan.thinking.train import train_adapter

pytestmark = [pytest.mark.slow, pytest.mark.torch, pytest.mark.model]

PROMPT = "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n"


def test_a_trained_adapter_loads_in_llama_cpp_and_changes_its_output(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    # A high learning rate so that three steps move the output measurably.
    settings = ThinkingSettings(examples=24, batch_size=8, learning_rate=5e-3, warmup_steps=1)
    report = train_adapter(settings, tmp_path, log=lambda _: None, checkpoint_every=2)
    assert report.steps == 3
    # A long run is saved as it goes, resumable from OUT/checkpoint.
    assert (tmp_path / "checkpoint" / "peft").is_dir()
    assert '"step": 2' in (tmp_path / "checkpoint" / "step.json").read_text()
    assert report.losses[-1] < report.losses[0]
    adapter = tmp_path / "adapter.gguf"
    assert adapter.read_bytes()[:4] == b"GGUF"
    texts = []
    for lora in (None, adapter):
        with LocalModel(adapter=lora) as model:
            backend = model.backend(cache=None)
            texts.append(backend.generate(PROMPT, max_tokens=12).text)
            if lora is not None:
                assert "+adapter@" in model.model_id
    # The adapter was trained to open a thinking block: with it applied, the server writes one.
    assert not texts[0].startswith("<think>")
    assert texts[1].startswith("<think>")
