"""Every example of docs/reference/production.md's "Shipping the cap" runs, as written, against
the real embedded model: the address of the server is the only thing changed (port 8080 in the docs,
the test server's port here), with a plan.json made for that model in the working folder."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from production_support import make_plan

from cotplan.errors import InputError

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reference" / "production.md"
#: The examples, in the order they run (the monitor's reads what the others logged).
NAMES = ("request fields", "wrapper", "streaming", "gateway", "litellm", "monitor")
BLOCK = re.compile(r"```python\n# shipping: ([a-z ]+)\n(.*?)```", re.DOTALL)


def examples() -> dict[str, str]:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Shipping the cap") :]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    return {name: code for name, code in BLOCK.findall(section)}


def test_the_section_has_an_example_for_each_way() -> None:
    assert set(examples()) == set(NAMES)


@pytest.mark.model
def test_every_example_runs_against_the_embedded_model(
    local_model: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COTPLAN_HOME", str(tmp_path / "home"))  # the examples' default log
    make_plan(local_model.model_id).save(tmp_path / "plan.json")
    found = examples()
    ran: dict[str, dict[str, Any]] = {}
    for name in NAMES:
        if name == "litellm":
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            try:
                import litellm
            except ImportError:  # the extra is optional: the other examples still run
                continue
            # LiteLLM copies `callbacks` into internal lists on first use: start from none.
            litellm.logging_callback_manager._reset_all_callbacks()
            monkeypatch.setattr(litellm, "callbacks", [])
        code = found[name].replace("http://127.0.0.1:8080/v1", local_model.base_url)
        namespace: dict[str, Any] = {}
        where = f"docs/reference/production.md ({name})"
        if name == "litellm":
            # The embedded model thinks in visible text and its server has no thinking budget:
            # the callback refuses it at start-up, naming the gateway as the fix
            # (docs/shipping.md).
            with pytest.raises(InputError, match="cotplan serve"):
                exec(compile(code, where, "exec"), namespace)
            continue
        exec(compile(code, where, "exec"), namespace)
        ran[name] = namespace
    assert ran["request fields"]["reply"].usage.completion_tokens <= 6  # the plan's cap
    assert ran["wrapper"]["report"].answer_forced
    streamed = ran["streaming"]
    assert streamed["answer"] == ran["wrapper"]["reply"].choices[0].message.content
    assert streamed["report"] == ran["wrapper"]["report"]
    assert ran["gateway"]["reply"].model_extra["cotplan"]["cap"] == 6
    if "litellm" in ran:
        assert ran["litellm"]["reply"].usage.completion_tokens <= 6
    report = ran["monitor"]["report"]
    assert report.calls >= 3  # the wrapper's calls and the gateway's
    assert list(report.to_frame()["cap"]) == [6]
