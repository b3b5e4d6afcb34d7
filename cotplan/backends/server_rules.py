"""What each inference server takes as a reasoning budget: plain caps and server-side caps.

A server that runs an open model (vLLM, llama.cpp, SGLang, Ollama) caps generated tokens with
`max_tokens`; cotplan then forces the answer itself in two phases (cut the thinking at k, close
it with the model's own closer, ask for the answer). Some servers also cap the thinking inside
one request: they count the tokens between the reasoning markers and force the end marker at
the budget. Those are the `*-thinking` rules here; they need the server started with its
reasoning parser (and, for SGLang, strict thinking), so a backend opts into them by name.

A server-side cap is only safe if it leaves room for the answer: the rules send the thinking
budget k and a `max_tokens` of k + `CLOSE_ROOM` + the answer's room, so the forced end marker
and the answer always fit under the overall cap. Sources read 2026-12-01, named on each rule.
"""

from __future__ import annotations

from typing import Any

from cotplan.backends.hosted_rules import BudgetRule

__all__ = ["CLOSE_ROOM", "CONTINUE_FINAL_MESSAGE", "SERVER_RULES"]

#: Tokens kept under the overall cap for what the server writes when it ends the thinking at
#: the budget (``</think>`` and a newline or two; llama.cpp's default budget message is empty).
CLOSE_ROOM = 8

_READ = "read 2026-12-01"

#: The fields that make a chat request continue its last (assistant) message: vLLM's
#: `continue_final_message` with `add_generation_prompt` off (vllm docs
#: serving/openai_compatible_server.md, chat completions extra parameters), which llama.cpp's
#: server also takes (ggml-org/llama.cpp PR #23012, 2026-05; it prefilled a trailing
#: assistant message by default before, PR #13608); read 2026-12-01. Budgeted CoT uses them
#: to force the answer after a cut thought inside the same assistant turn.
CONTINUE_FINAL_MESSAGE: tuple[tuple[str, Any], ...] = (
    ("continue_final_message", True),
    ("add_generation_prompt", False),
)
_TWO_PHASE = (
    "two-phase: cotplan cuts the thinking at k, closes it with the model's own closer (its "
    "reasoning protocol) and asks for the answer"
)
_SERVER_FORCES = (
    "one request: the server forces the end-of-thinking marker at k and the answer follows; "
    "`max_tokens` keeps room for the marker and the answer"
)

SERVER_RULES: tuple[BudgetRule, ...] = (
    BudgetRule(
        "vllm",
        "max_tokens",
        "output",
        notes="OpenAI-compatible; logprobs up to 20 by default",
        provider="vLLM (any OpenAI-compatible server)",
        forcing=_TWO_PHASE,
        prefill=CONTINUE_FINAL_MESSAGE,
        source=f"vllm docs/features/reasoning_outputs.md; {_READ}",
    ),
    BudgetRule(
        "vllm-thinking",
        "thinking_token_budget",
        "reasoning",
        answer_room=True,
        off=0,
        notes="vLLM's per-request thinking cap; needs `--reasoning-parser` and "
        "`--reasoning-config` (the start/end strings it forces); older releases ignore it",
        shape="budget",
        total_cap=True,
        close_room=CLOSE_ROOM,
        provider="vLLM with a reasoning parser",
        forcing=_SERVER_FORCES,
        source="vllm docs/features/reasoning_outputs.md (`thinking_token_budget`, "
        f"`--reasoning-config`); {_READ}",
    ),
    BudgetRule(
        "llama.cpp",
        "max_tokens",
        "output",
        notes="OpenAI-compatible (`n_predict` natively); the embedded model uses this",
        provider="llama.cpp server (and the embedded model)",
        forcing=_TWO_PHASE,
        prefill=CONTINUE_FINAL_MESSAGE,
        source=f"ggml-org/llama.cpp tools/server/README.md; {_READ}",
    ),
    BudgetRule(
        "llama.cpp-thinking",
        "thinking_budget_tokens",
        "reasoning",
        answer_room=True,
        off=0,
        notes="llama.cpp's per-request thinking cap; needs the reasoning format on "
        "(`--reasoning-format deepseek`, the default auto); prefilling the assistant turn "
        "while thinking is on is refused",
        shape="budget",
        total_cap=True,
        close_room=CLOSE_ROOM,
        provider="llama.cpp server with reasoning on",
        forcing=_SERVER_FORCES,
        source="ggml-org/llama.cpp tools/server/README.md (`thinking_budget_tokens`, "
        f"`--reasoning-budget-message`); {_READ}",
    ),
    BudgetRule(
        "sglang",
        "max_tokens",
        "output",
        notes="OpenAI-compatible; the `thinking_budget` chat-template kwarg is only a hint",
        provider="SGLang",
        forcing=_TWO_PHASE,
        source=f"docs.sglang.io advanced_features/thinking_budget; {_READ}",
    ),
    BudgetRule(
        "sglang-thinking",
        "custom_params.thinking_budget",
        "reasoning",
        answer_room=True,
        off=0,
        notes="SGLang's per-request thinking cap; exact only with `--enable-strict-thinking` "
        "(or the custom logit processor) and a `--reasoning-parser`",
        shape="budget",
        total_cap=True,
        close_room=CLOSE_ROOM,
        provider="SGLang with strict thinking",
        forcing=_SERVER_FORCES,
        source="docs.sglang.io advanced_features/thinking_budget (`custom_params`, "
        f"`--enable-strict-thinking`); {_READ}",
    ),
    BudgetRule(
        "nim-thinking",
        "nvext.max_thinking_tokens",
        "reasoning",
        answer_room=True,
        off=0,
        notes="NVIDIA NIM's per-request thinking cap (its `nvext` extension); it may run "
        "about 10% past the budget to finish a sentence",
        shape="budget",
        total_cap=True,
        close_room=CLOSE_ROOM,
        provider="NVIDIA NIM for LLMs",
        forcing=_SERVER_FORCES,
        source="NVIDIA NIM for LLMs docs (`nvext.max_thinking_tokens`, GET /v1/version); "
        "read 2026-12-05",
    ),
    BudgetRule(
        "ollama",
        "max_tokens",
        "output",
        effort=True,
        notes="OpenAI-compatible; no thinking budget (thinking on/off and levels only); "
        "logprobs support varies by version",
        provider="Ollama",
        forcing=_TWO_PHASE,
        source=f"ollama docs capabilities/thinking; {_READ}",
    ),
)
