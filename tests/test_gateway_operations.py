"""What operators run the gateway with: /health and /ready, Prometheus /metrics, client keys
distinct from the upstream's, several plans routed by model, and a reload that swaps plans
without dropping a call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from production_support import PLAIN, THINKER, Upstream, ask, make_plan, run_cli, text_reply
from starlette.testclient import TestClient

from cotplan.errors import InputError
from cotplan.production import capped
from cotplan.production.client_keys import read_client_keys
from cotplan.production.gateway import Gateway, make_app
from cotplan.production.metrics import GatewayMetrics
from cotplan.production.routes import Routes

KEY = "client-key-0123456789"


def answers(upstream: Upstream) -> None:
    upstream.replies += [text_reply("Let me add", "length", 6), text_reply(" 13", "stop", 2)]


def test_health_is_the_process_and_ready_is_the_upstream(tmp_path: Path) -> None:
    def down(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    def up(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(404, json={"error": {"message": "no /models here"}})

    for handler, status in ((down, 503), (up, 200)):
        client = openai.OpenAI(
            api_key="k",
            base_url="http://127.0.0.1:9/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        )
        with TestClient(make_app(capped(client, make_plan(THINKER), log=False))) as http:
            assert http.get("/health").json() == {"status": "ok"}
            ready = http.get("/ready")
        assert ready.status_code == status
        if status == 503:
            assert ready.json()["error"]["type"] == "upstream_error"


def test_metrics_count_calls_tokens_bites_and_errors(tmp_path: Path) -> None:
    upstream = Upstream()
    answers(upstream)
    upstream.replies.append(503)
    metrics = GatewayMetrics()
    client = capped(upstream.client(), make_plan(THINKER), log=tmp_path / "log.sqlite")
    with TestClient(make_app(client, metrics=metrics)) as http:
        assert http.post("/v1/chat/completions", json={**ask(), "size": 3}).status_code == 200
        assert http.post("/v1/chat/completions", json={**ask(), "size": 3}).status_code == 503
        page = http.get("/metrics")
    assert page.headers["content-type"].startswith("text/plain")
    text = page.text
    labels = f'model="{THINKER}",route="{THINKER}"'
    assert f'cotplan_requests_total{{{labels},status="200"}} 1.0' in text
    assert f'cotplan_requests_total{{{labels},status="503"}} 1.0' in text
    assert f"cotplan_reasoning_tokens_total{{{labels}}} 6.0" in text
    assert f"cotplan_cap_bites_total{{{labels}}} 1.0" in text
    assert f"cotplan_forced_answers_total{{{labels}}} 1.0" in text
    assert f'cotplan_errors_total{{{labels},type="upstream_error"}} 1.0' in text
    assert f"cotplan_request_seconds_count{{{labels}}} 2.0" in text


def test_client_keys_are_the_gateways_own(tmp_path: Path) -> None:
    upstream = Upstream()
    answers(upstream)
    client = capped(upstream.client(), make_plan(THINKER), log=False)
    with TestClient(make_app(client, client_keys=[KEY])) as http:
        none = http.post("/v1/chat/completions", json={**ask(), "size": 3})
        # The upstream's key ("test" in the double) is not a key to the gateway.
        upstreams = http.get("/v1/models", headers={"Authorization": "Bearer test"})
        good = http.post(
            "/v1/chat/completions",
            json={**ask(), "size": 3},
            headers={"Authorization": f"Bearer {KEY}"},
        )
        health = http.get("/health")
    assert (none.status_code, upstreams.status_code, good.status_code) == (401, 401, 200)
    assert none.json()["error"]["type"] == "invalid_request_error"
    assert health.status_code == 200
    assert len(upstream.requests) == 2  # only the authenticated call went on


def test_a_client_keys_file_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# the search team\n{KEY}\n\n{KEY[::-1]}\n")
    assert read_client_keys(path) == (KEY, KEY[::-1])
    path.write_text("short\n")
    with pytest.raises(InputError, match="at least 16 characters"):
        read_client_keys(path)


def routes(upstream: Upstream, *plans: Any) -> Routes:
    def build(plan: Any) -> Any:
        return capped(upstream.client(), plan, log=False)

    return Routes(build, list(plans))


def test_several_plans_are_routed_by_model_or_header() -> None:
    upstream = Upstream()
    answers(upstream)
    answers(upstream)
    table = routes(upstream, make_plan(THINKER, tokens=6), make_plan(PLAIN, tokens=9))
    with TestClient(make_app(table)) as http:
        listed = [m["id"] for m in http.get("/v1/models").json()["data"]]
        first = http.post("/v1/chat/completions", json={**ask(THINKER), "size": 3})
        second = http.post("/v1/chat/completions", json={**ask(PLAIN), "size": 3})
        unknown = http.post("/v1/chat/completions", json={**ask("acme-reasoner"), "size": 3})
        bad_route = http.post(
            "/v1/chat/completions",
            json={**ask(THINKER), "size": 3},
            headers={"X-Cotplan-Route": "nowhere"},
        )
    assert listed == [THINKER, PLAIN]
    assert (first.json()["cotplan"]["cap"], second.json()["cotplan"]["cap"]) == (6, 9)
    assert (unknown.status_code, unknown.json()["error"]["param"]) == (400, "model")
    assert (bad_route.status_code, bad_route.json()["error"]["param"]) == (400, "x-cotplan-route")


def test_two_plans_for_one_model_are_refused() -> None:
    with pytest.raises(InputError, match="two plans"):
        routes(Upstream(), make_plan(THINKER), make_plan(THINKER, tokens=9))


def test_a_reload_swaps_the_plans_and_a_broken_file_keeps_the_old_ones(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    make_plan(THINKER, tokens=6).save(path)
    gateway = Gateway(
        [path],
        "http://127.0.0.1:9/v1",
        provider="openai-compatible",  # declared: nothing is asked of the upstream
        log=tmp_path / "log.sqlite",
    )
    before = gateway.client
    make_plan(THINKER, tokens=12).save(path)
    assert gateway.reload() is None
    assert gateway.client.plan.budgets[0].tokens == 12
    assert before.plan.budgets[0].tokens == 6  # a call under way keeps its plan
    path.write_text("{not json")
    assert isinstance(gateway.reload(), InputError)
    assert gateway.client.plan.budgets[0].tokens == 12


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--provider", "nonesuch"], "`provider`"),
        (["--client-keys-file", "/no/such/keys"], "/no/such/keys"),
        (["--workers", "0"], "`workers`"),
    ],
)
def test_serve_checks_its_new_options_before_it_starts(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
    named: str,
) -> None:
    monkeypatch.delenv("COTPLAN_DEBUG", raising=False)
    plan = make_plan(THINKER).save(tmp_path / "plan.json")
    code, said = run_cli(
        ["serve", "--plan", str(plan), "--upstream", "http://127.0.0.1:9/v1", *options], capsys
    )
    assert code == 2
    assert named in said


def test_completions_and_embeddings_pass_through_with_errors_scrubbed() -> None:
    sent: list[tuple[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append((request.url.path, request.headers.get("authorization")))
        if request.url.path.endswith("/embeddings"):
            return httpx2.Response(200, json={"data": [{"embedding": [0.5]}]})
        return httpx2.Response(400, json={"error": {"message": "Authorization: Bearer up-key"}})

    client = openai.OpenAI(
        api_key="up-key-0123456789",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with TestClient(make_app(capped(client, make_plan(THINKER), log=False))) as http:
        embedded = http.post("/v1/embeddings", json={"model": "e", "input": "x"})
        failed = http.post("/v1/completions", json={"model": "m", "prompt": "x"})
        streamed = http.post("/v1/completions", json={"model": "m", "prompt": "x", "stream": True})
    assert embedded.json() == {"data": [{"embedding": [0.5]}]}
    assert failed.status_code == 400
    assert "up-key" not in failed.text
    assert (streamed.status_code, streamed.json()["error"]["param"]) == (400, "stream")
    assert sent[0] == ("/v1/embeddings", "Bearer up-key-0123456789")
    assert len(sent) == 2
