"""Generation wrappers: budgeted chain of thought (reason for at most k tokens, then answer)."""

from cotplan.generate.budgeted import (
    CHAT_TEMPLATES,
    DEFAULT_PROMPT,
    BudgetedAnswer,
    ChatTemplate,
    CoTPrompt,
    answers_frame,
    budgeted_answer,
    budgeted_answers,
    resolve_mode,
    template_for,
)

__all__ = [
    "CHAT_TEMPLATES",
    "DEFAULT_PROMPT",
    "BudgetedAnswer",
    "ChatTemplate",
    "CoTPrompt",
    "answers_frame",
    "budgeted_answer",
    "budgeted_answers",
    "resolve_mode",
    "template_for",
]
