"""Train the embedded thinking model's LoRA adapter on CPU (needs the `train` extra).

    cotplan models train-thinking --out DIR

loads SmolLM2-135M-Instruct from the very GGUF file the server runs (transformers dequantizes
it, so the adapter fits the weights that are served), adds LoRA on the attention value/output
and MLP projections, and trains on `cotplan.thinking.data.training_examples` with the loss on
the assistant turn only. The result is written as a PEFT folder and as a llama.cpp adapter GGUF
(`cotplan.thinking.export`). Seeded: the same settings give the same adapter on the same build.

transformers, peft and gguf are imported only here, so running the model never needs them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cotplan.backends.models import DEFAULT_MODEL, locate
from cotplan.errors import InputError
from cotplan.thinking.data import Example, ThinkingSettings, training_examples
from cotplan.validation import require_folder_target

__all__ = ["DEVICES", "TrainReport", "check_device", "check_out", "load_base", "train_adapter"]

#: Where training may run: the command runs on CPU everywhere; a CUDA accelerator trains the
#: same steps faster (not bit for bit the same: its kernels sum in another order).
DEVICES = ("cpu", "cuda", "auto")


def _require_train_extra() -> None:
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise InputError(
            f"training needs the train extra (pip install 'cotplan[train]'): {exc}",
            field="train",
        ) from None


def check_device(device: str) -> str:
    """`device` if it names one of `DEVICES` (checked before torch loads)."""
    from cotplan.validation import require_choice

    require_choice(device, "device", DEVICES)
    return device


def _torch_device(device: str) -> str:
    """The torch device `device` ('auto': CUDA where torch sees one) resolves to."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError(
            "torch sees no CUDA device here: train with --device cpu (or auto)", field="device"
        )
    return device


def load_base(threads: int = 2, device: str = "cpu") -> tuple[Any, Any]:
    """The base model and tokenizer, dequantized from the served GGUF file."""
    _require_train_extra()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    path, _ = locate(DEFAULT_MODEL)
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    return model.to(device), tokenizer


@dataclass(frozen=True)
class TrainReport:
    """What a training run did: steps, tokens, wall time and the loss along the way."""

    steps: int
    examples: int
    tokens: int
    seconds: float
    losses: tuple[float, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "steps": self.steps,
            "examples": self.examples,
            "tokens": self.tokens,
            "seconds": round(self.seconds, 1),
            "first_loss": self.losses[0] if self.losses else None,
            "last_loss": self.losses[-1] if self.losses else None,
        }


def _encode(examples: list[Example], tokenizer: Any) -> list[tuple[list[int], list[int]]]:
    out = []
    for example in examples:
        prompt = tokenizer(example.prompt, add_special_tokens=False)["input_ids"]
        completion = tokenizer(example.completion, add_special_tokens=False)["input_ids"]
        out.append((prompt + completion, [-100] * len(prompt) + completion))
    return out


def _batches(
    encoded: list[tuple[list[int], list[int]]], size: int, rng: Any, *, curriculum: bool = False
) -> list[list[int]]:
    # A curriculum keeps the examples' own order (their sizes grow along it).
    if curriculum:
        return [list(range(i, min(i + size, len(encoded)))) for i in range(0, len(encoded), size)]
    # Batches of similar length waste little on padding; their order is shuffled.
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    batches = [order[i : i + size] for i in range(0, len(order), size)]
    rng.shuffle(batches)
    return batches


def _trainable_model(
    settings: ThinkingSettings, resume: Path | None, device: str = "cpu"
) -> tuple[Any, Any]:
    """The base model with a fresh LoRA adapter, or with `resume`'s adapter, ready to train."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    # Seeded before the base loads so that the LoRA initialisation is the same on every run.
    torch.manual_seed(settings.seed)
    model, tokenizer = load_base(settings.threads, device)
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        lora_dropout=0.0,
        target_modules=list(settings.targets),
        bias="none",
        task_type="CAUSAL_LM",
    )
    if resume is None:
        model = get_peft_model(model, config)
    else:
        model = PeftModel.from_pretrained(model, str(resume / "peft"), is_trainable=True)
    model.to(device)
    model.train()
    return model, tokenizer


def _warmup_cosine(settings: ThinkingSettings, steps: int) -> Callable[[int], float]:
    """The learning-rate factor at each step: linear warm-up, then a cosine decay to 0."""

    def rate(step: int) -> float:
        if step < settings.warmup_steps:
            return (step + 1) / settings.warmup_steps
        progress = (step - settings.warmup_steps) / max(1, steps - settings.warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return rate


def _tensors(
    encoded: list[tuple[list[int], list[int]]], batch: list[int], pad: int, device: str = "cpu"
) -> tuple[Any, Any, Any]:
    """Token ids, labels and attention mask of one batch, right-padded to its longest item."""
    import torch

    width = max(len(encoded[i][0]) for i in batch)
    ids = torch.full((len(batch), width), pad, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, index in enumerate(batch):
        seq, lab = encoded[index]
        ids[row, : len(seq)] = torch.tensor(seq)
        labels[row, : len(lab)] = torch.tensor(lab)
        mask[row, : len(seq)] = 1
    return ids.to(device), labels.to(device), mask.to(device)


@dataclass(frozen=True)
class _Progress:
    """Where the training loop stopped: its last step, the tokens seen and each step's loss."""

    step: int
    tokens: int
    losses: tuple[float, ...]
    seconds: float


def _train_steps(
    model: Any,
    encoded: list[tuple[list[int], list[int]]],
    plan: list[list[int]],
    *,
    settings: ThinkingSettings,
    pad: int,
    log: Callable[[str], None],
    max_seconds: float | None,
    checkpoint: Callable[[int], None] | None = None,
    checkpoint_every: int | None = None,
    device: str = "cpu",
) -> _Progress:
    """Run the batches of `plan` through AdamW, logging every 10 steps, until done or out of
    time."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_cosine(settings, len(plan)))
    start, tokens, losses, step = time.monotonic(), 0, [], 0
    for step, batch in enumerate(plan, start=1):
        ids, labels, mask = _tensors(encoded, batch, pad, device)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        tokens += int(mask.sum())
        losses.append(round(loss.item(), 4))
        elapsed = time.monotonic() - start
        if step % 10 == 0 or step == len(plan):
            recent = sum(losses[-10:]) / len(losses[-10:])
            log(
                f"step {step}/{len(plan)}  loss {recent:.4f}  {tokens / elapsed:.0f} tokens/s  "
                f"{elapsed:.0f} s"
            )
        if checkpoint is not None and checkpoint_every and step % checkpoint_every == 0:
            checkpoint(step)
        if max_seconds is not None and elapsed > max_seconds:
            log(f"stopping at the time limit ({max_seconds:.0f} s) after {step} steps")
            break
    return _Progress(step, tokens, tuple(losses), time.monotonic() - start)


#: What a trained adapter's folder holds; a folder holding any of them is not trained into.
_ADAPTER_FILES = ("peft", "adapter.gguf", "train.json")


def check_out(out: Path | str, field: str = "out") -> Path:
    """A folder a new adapter can be written to: creatable or writable, not a file, and not
    one that already holds an adapter (training would replace it only at the very end, after
    minutes of work; an earlier stage's record would be lost)."""
    folder = require_folder_target(out, field)
    assert folder is not None
    held = [name for name in _ADAPTER_FILES if (folder / name).exists()]
    if held:
        raise InputError(
            f"{folder} already holds a trained adapter ({', '.join(held)}): give a new folder",
            field=field,
        )
    return folder


def train_adapter(
    settings: ThinkingSettings,
    out: Path,
    *,
    log: Callable[[str], None] = print,
    max_seconds: float | None = None,
    resume: Path | None = None,
    checkpoint_every: int | None = None,
    device: str = "cpu",
) -> TrainReport:
    """Train the adapter `settings` describe and write it to `out` (PEFT folder + GGUF).

    `resume` names the folder of an earlier stage: its adapter is trained further instead of
    a fresh one (the shipped adapter is two stages; docs/thinking-model.md)."""
    out = check_out(out)  # before torch loads: a bad folder costs nothing
    check_device(device)
    _require_train_extra()
    import numpy as np

    from cotplan.thinking.export import write_adapter_gguf

    device = _torch_device(device)
    model, tokenizer = _trainable_model(settings, resume, device)
    encoded = _encode(training_examples(settings), tokenizer)
    rng = np.random.default_rng(settings.seed)
    plan = [
        batch
        for _ in range(settings.epochs)
        for batch in _batches(encoded, settings.batch_size, rng, curriculum=settings.curriculum)
    ]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def checkpoint(step: int) -> None:
        # A run of hours must survive being stopped: the adapter so far, resumable with
        # `--resume OUT/checkpoint` (the optimiser's moments are not kept).
        model.save_pretrained(str(out / "checkpoint" / "peft"))
        (out / "checkpoint" / "step.json").write_text(json.dumps({"step": step}))
        log(f"checkpoint at step {step}: {out / 'checkpoint'}")

    done = _train_steps(
        model,
        encoded,
        plan,
        settings=settings,
        pad=pad,
        log=log,
        max_seconds=max_seconds,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        device=device,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out / "peft"))
    report = TrainReport(done.step, len(encoded), done.tokens, done.seconds, done.losses)
    write_adapter_gguf(model, out / "adapter.gguf", settings)
    (out / "train.json").write_text(
        json.dumps(
            {
                "settings": settings.to_dict(),
                "report": report.to_dict(),
                "device": device,
                "losses": list(done.losses),
            },
            indent=1,
        )
    )
    return report


def install_adapter(
    folder: Path, earlier: tuple[Path, ...] = (), *, adapter: str = "thinking"
) -> Path:
    """Copy a trained adapter into the package as the shipped one, with its record (SHA-256,
    settings, training report, and those of the `earlier` stages it was resumed from) beside
    it. For maintainers shipping a new adapter."""
    import hashlib
    import shutil

    from cotplan.backends.adapters import ADAPTER_ALIASES, KNOWN_ADAPTERS, adapter_dir

    spec = KNOWN_ADAPTERS[ADAPTER_ALIASES.get(adapter, adapter)]
    source = folder / "adapter.gguf"
    if not source.is_file():
        raise InputError(f"no adapter.gguf in {folder}", field="folder")
    target = adapter_dir() / spec.file_name
    shutil.copyfile(source, target)
    trained = json.loads((folder / "train.json").read_text())
    stages = [json.loads((stage / "train.json").read_text()) for stage in earlier]
    record = {
        "sha256": hashlib.sha256(target.read_bytes()).hexdigest(),
        "base": spec.base,
        "stages": [
            {"settings": stage["settings"], "report": stage["report"]}
            for stage in [*stages, trained]
        ],
    }
    (adapter_dir() / spec.record_name).write_text(json.dumps(record, indent=1) + "\n")
    return target
