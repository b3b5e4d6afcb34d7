"""API keys come from the environment or a private key file the user names, and nowhere else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cotplan.backends.keys import KEY_FILE_ENV, find_key, read_key_file
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.errors import ConfigError, InputError, MissingKeyError

SECRET = "sk-cotplan-keyfile-canary-0c9e41"


def _key_file(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "keys.env"
    path.write_text(text)
    os.chmod(path, mode)
    return path


@pytest.fixture(autouse=True)
def _no_keys_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(KEY_FILE_ENV, raising=False)


def test_a_key_file_is_read_like_a_dotenv(tmp_path: Path) -> None:
    path = _key_file(tmp_path, f"# my keys\nexport OPENAI_API_KEY='{SECRET}'\n\nOTHER = x\n")
    assert read_key_file(path) == {"OPENAI_API_KEY": SECRET, "OTHER": "x"}


def test_the_environment_wins_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _key_file(tmp_path, f"OPENAI_API_KEY={SECRET}\n")
    assert find_key("OPENAI_API_KEY", path) == SECRET
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert find_key("OPENAI_API_KEY", path) == "from-env"


def test_the_client_takes_its_key_from_the_file_named_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(MissingKeyError, match="COTPLAN_KEY_FILE"):
        OpenAICompatibleBackend("gpt-4o-mini")
    monkeypatch.setenv(KEY_FILE_ENV, str(_key_file(tmp_path, f"OPENAI_API_KEY={SECRET}\n")))
    backend = OpenAICompatibleBackend("gpt-4o-mini")
    assert backend._client.api_key == SECRET
    assert SECRET not in repr(backend)


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = _key_file(tmp_path, f"OPENAI_API_KEY={SECRET}\n", mode=0o644)
    with pytest.raises(ConfigError, match="chmod 600") as caught:
        read_key_file(path)
    assert SECRET not in str(caught.value)


def test_a_malformed_key_file_names_the_line_but_not_the_key(tmp_path: Path) -> None:
    path = _key_file(tmp_path, f"OPENAI_API_KEY={SECRET}\n{SECRET}\n")
    with pytest.raises(InputError, match="line 2") as caught:
        read_key_file(path)
    assert SECRET not in str(caught.value)


def test_a_missing_key_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such key file"):
        find_key("OPENAI_API_KEY", tmp_path / "absent.env")
