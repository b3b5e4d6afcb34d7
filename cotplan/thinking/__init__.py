"""The embedded thinking model: its training traces, training and adapter export.

Serving it needs nothing from here (`connect("local:thinking")` reads the shipped adapter through
`cotplan.backends.adapters`); this package holds what made it: `traces` (thinking traces in the
R1/Qwen3 shape for the built-in families), `data` (the seeded training set), `train` (LoRA
training from the served GGUF, with the `train` extra) and `export` (the llama.cpp adapter file).
"""

from cotplan.thinking.data import ThinkingSettings, training_examples
from cotplan.thinking.traces import Trace, make_trace, work_lines

__all__ = ["ThinkingSettings", "Trace", "make_trace", "training_examples", "work_lines"]
