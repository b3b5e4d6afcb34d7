"""The shipped adapter's record and checks, and the PEFT -> llama.cpp tensor names (no model)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cotplan.backends import adapters
from cotplan.backends.adapters import KNOWN_ADAPTERS, adapter_dir, locate_adapter
from cotplan.errors import ModelFileError
from cotplan.thinking.export import gguf_tensor_name

_PREFIX = "base_model.model.model.layers."


@pytest.mark.parametrize(
    ("peft_key", "expected"),
    [
        ("0.self_attn.v_proj.lora_A.default.weight", "blk.0.attn_v.weight.lora_a"),
        ("29.mlp.down_proj.lora_B.weight", "blk.29.ffn_down.weight.lora_b"),
        ("3.self_attn.o_proj.lora_B.default.weight", "blk.3.attn_output.weight.lora_b"),
        ("3.mlp.gate_proj.lora_A.default.weight", "blk.3.ffn_gate.weight.lora_a"),
        # Query and key are stored permuted by llama.cpp: never adapted, never exported.
        ("3.self_attn.q_proj.lora_A.default.weight", None),
        ("3.mlp.up_proj.base_layer.weight", None),
    ],
)
def test_peft_keys_map_to_llama_cpp_adapter_names(peft_key: str, expected: str | None) -> None:
    assert gguf_tensor_name(_PREFIX + peft_key) == expected


def test_the_shipped_adapter_matches_its_record() -> None:
    spec, path = locate_adapter("thinking") or (None, None)
    assert spec is KNOWN_ADAPTERS["smollm2-135m-thinking"]
    assert path is not None
    assert path.read_bytes()[:4] == b"GGUF"
    record = spec.record()
    assert record["base"] == "smollm2-135m-instruct"
    assert spec.model_id.startswith("smollm2-135m-thinking@")
    assert locate_adapter("smollm2-135m-instruct") is None


def test_a_damaged_adapter_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = KNOWN_ADAPTERS["smollm2-135m-thinking"]
    for name in (spec.file_name, spec.record_name):
        shutil.copyfile(adapter_dir() / name, tmp_path / name)
    monkeypatch.setattr(adapters, "adapter_dir", lambda: tmp_path)
    damaged = bytearray((tmp_path / spec.file_name).read_bytes())
    damaged[-1] ^= 0xFF
    (tmp_path / spec.file_name).write_bytes(bytes(damaged))
    with pytest.raises(ModelFileError, match="sha256"):
        locate_adapter("thinking")
    (tmp_path / spec.file_name).unlink()
    with pytest.raises(ModelFileError, match="missing"):
        locate_adapter("thinking")
    (tmp_path / spec.record_name).write_text(json.dumps({"no": "sha"}))
    with pytest.raises(ModelFileError, match="sha256"):
        spec.record()
