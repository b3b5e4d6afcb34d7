"""`cotplan cache info | verify | clear` on a cache a scripted endpoint filled."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cotplan.backends.cache import CallCache
from cotplan.backends.openai_compat import OpenAICompatibleBackend
from cotplan.backends.testing import ScriptedEndpoint
from cotplan.cli import app, main

runner = CliRunner()


@pytest.fixture
def cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache holding 3 calls to `model-a` and 1 to `model-b`, named by `COTPLAN_CACHE`."""
    path = tmp_path / "cache.sqlite"
    monkeypatch.setenv("COTPLAN_CACHE", str(path))
    cache = CallCache(path)
    with ScriptedEndpoint() as endpoint:
        for model, prompts in (("model-a", ["1", "2", "3"]), ("model-b", ["1"])):
            backend = OpenAICompatibleBackend(model, base_url=endpoint.base_url, cache=cache)
            for prompt in prompts:
                backend.generate(prompt, max_tokens=4)
    return path


def _cli(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = runner.invoke(app, ["cache", *args], input=stdin, env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_info_counts_calls_per_model(cache_file: Path) -> None:
    code, out = _cli("info")
    assert code == 0
    assert str(cache_file) in out
    assert "4 recorded calls" in out
    assert "model-a" in out
    assert "model-b" in out


def test_commands_on_a_missing_cache_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COTPLAN_CACHE", str(tmp_path / "none.sqlite"))
    for command in ("info", "verify", "clear"):
        code, out = _cli(command)
        assert (code, "no call cache" in out) == (0, True), command
    assert not (tmp_path / "none.sqlite").exists()


def test_verify_finds_then_discards_a_tampered_row(cache_file: Path) -> None:
    assert _cli("verify") == (0, "4 recorded calls checked, 0 damaged\n")
    with sqlite3.connect(cache_file) as conn:
        conn.execute("UPDATE calls SET response = replace(response, 'answer', 'ANSWER')")
    code, out = _cli("verify")
    assert code == 1
    assert out.count("damaged: model-") == 4
    assert "does not match its checksum" in out
    assert "cotplan cache verify --discard" in out
    code, out = _cli("verify", "--discard")
    assert code == 0
    assert "4 damaged, 4 discarded" in out
    assert _cli("verify") == (0, "0 recorded calls checked, 0 damaged\n")


def test_clear_by_model_and_age(cache_file: Path) -> None:
    assert _cli("clear", "--model", "model-c") == (0, "0 recorded calls removed, 4 left\n")
    assert _cli("clear", "--older-than", "1") == (0, "0 recorded calls removed, 4 left\n")
    assert _cli("clear", "--model", "model-b", "--older-than", "0") == (
        0,
        "1 recorded calls removed, 3 left\n",
    )


def test_clearing_everything_is_asked(cache_file: Path) -> None:
    code, _ = _cli("clear", stdin="n\n")
    assert code == 1
    assert len(CallCache(cache_file)) == 4
    code, out = _cli("clear", stdin="y\n")
    assert (code, out.splitlines()[-1]) == (0, "4 recorded calls removed, 0 left")
    assert _cli("clear", "--yes") == (0, "0 recorded calls removed, 0 left\n")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("--older-than", "-1"), "`older_than`"),
        (("--older-than", "nan"), "`older_than`"),
        (("--model", " "), "`model`"),
    ],
)
def test_bad_filters_name_the_option(
    args: tuple[str, ...], field: str, cache_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["cache", "clear", *args])
    assert info.value.code == 2
    assert field in capsys.readouterr().err
    assert len(CallCache(cache_file)) == 4
