"""Write a PEFT LoRA adapter of the SmolLM2 (llama) model as a llama.cpp adapter GGUF.

llama.cpp loads LoRA adapters as GGUF files with `general.type = adapter`, `adapter.type =
lora`, `adapter.lora.alpha`, and a pair of tensors per adapted weight, named after the base
tensor with `.lora_a` / `.lora_b` appended (the layout of llama.cpp's convert_lora_to_gguf.py).
A is stored as PyTorch has it, [rank, in], and B as [out, rank]; llama.cpp scales by
alpha / rank exactly as PEFT does.

Only the value, output and MLP projections are adapted: llama.cpp stores the query and key
weights with their rows permuted for its RoPE layout, which an adapter on them would have to
follow; leaving them out keeps the export a plain renaming.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["GGUF_NAMES", "gguf_tensor_name", "write_adapter_gguf"]

#: PEFT module names -> llama.cpp tensor names (within `blk.N.`).
GGUF_NAMES = {
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}

# PEFT names the adapter inside the key of a live model ("lora_A.default.weight") but not in
# a saved folder ("lora_A.weight").
_PEFT_KEY = re.compile(r"layers\.(\d+)\.(self_attn\.\w+|mlp\.\w+)\.lora_([AB])(?:\.\w+)?\.weight$")


def gguf_tensor_name(peft_key: str) -> str | None:
    """The llama.cpp name of one PEFT LoRA tensor (None for keys that are not LoRA weights)."""
    match = _PEFT_KEY.search(peft_key)
    if match is None or match.group(2) not in GGUF_NAMES:
        return None
    layer, module, side = match.groups()
    return f"blk.{layer}.{GGUF_NAMES[module]}.weight.lora_{side.lower()}"


def write_adapter_gguf(model: Any, path: Path, settings: Any) -> int:
    """Write `model`'s LoRA weights (a PEFT model) to `path`; returns the tensor count."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(settings.alpha))
    count = 0
    for key, tensor in sorted(model.state_dict().items()):
        name = gguf_tensor_name(key)
        if name is None:
            continue
        writer.add_tensor(name, tensor.detach().to("cpu").float().numpy().astype(np.float16))
        count += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return count
