"""API keys never reach disk or messages: a real run through the CLI is scanned for its key."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from cotplan.backends.local import LocalModel

pytestmark = pytest.mark.model

SECRET = "sk-cotplan-canary-7f3a9c1e5b2d4f60a8e1"


def _run(
    args: list[str], home: Path, cwd: Path, key_from: str = "env"
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COTPLAN_HOME": str(home)}
    env.pop("COTPLAN_DEBUG", None)
    env.pop("OPENAI_API_KEY", None)
    if key_from == "env":
        env["OPENAI_API_KEY"] = SECRET
    else:  # a private key file the user names, outside the folders the run writes
        key_file = cwd.parent / f"{cwd.name}-keys.env"
        key_file.write_text(f"OPENAI_API_KEY={SECRET}\n")
        key_file.chmod(0o600)
        env["COTPLAN_KEY_FILE"] = str(key_file)
    return subprocess.run(
        [sys.executable, "-m", "cotplan", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


@pytest.mark.parametrize("key_from", ["env", "file"])
def test_a_calibration_run_writes_the_key_nowhere(
    local_model: LocalModel, tmp_path: Path, key_from: str
) -> None:
    home, out = tmp_path / "home", tmp_path / "out"
    result = _run(
        [
            "calibrate",
            "--family",
            "arithmetic",
            "--n",
            "2",
            "--count",
            "2",
            "--budgets",
            "0,8",
            "--backend",
            f"openai:{local_model.model_id}",
            "--base-url",
            local_model.base_url,
            "--out",
            str(out),
            "--no-progress",
        ],
        home,
        tmp_path,
        key_from,
    )
    assert result.returncode == 0, result.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in written), "the run should have used the cache"
    assert any(p.suffix == ".csv" for p in written), "the run should have written its report"
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"the key leaked into {path}"
    assert SECRET not in result.stdout + result.stderr
    for path in written:
        # The cache and the reports hold the model's answers: private to the user.
        if path.suffix in {".sqlite", ".csv"}:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


class _Rejecting(BaseHTTPRequestHandler):
    """Answers 401 with a body that echoes the whole request, key included (as some gateways
    do), so a client that printed the body would leak the key."""

    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
        request = f"{self.command} {self.path} {dict(self.headers)!r} {body}"
        type(self).seen.append(request)
        payload = json.dumps({"error": {"message": f"invalid API key; you sent {request}"}})
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload.encode())))
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args: object) -> None:
        pass


def test_a_rejected_key_is_not_echoed(tmp_path: Path) -> None:
    _Rejecting.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rejecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        result = _run(
            [
                "calibrate", "--family", "arithmetic", "--n", "2", "--count", "1",
                "--budgets", "0", "--backend", "openai:some-model", "--base-url", url,
                "--out", str(tmp_path / "out"), "--no-progress",
            ],
            tmp_path / "home",
            tmp_path,
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    # The request reached the server with the key, and its 401 body (echoing it) was read.
    assert len(_Rejecting.seen) == 1, "a 401 is not retried"
    assert f"Bearer {SECRET}" in _Rejecting.seen[0]
    assert result.returncode == 2
    assert "401" in result.stderr
    assert f"127.0.0.1:{server.server_address[1]}" in result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"the key leaked into {path}"
