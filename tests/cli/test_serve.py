"""``reinforge serve``: help text, app construction from a config, user errors.

uvicorn itself is not started here (``run_server`` is replaced by a stub that
records what it was given); tests/models/openai_api/test_server.py covers the live
server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from reinforge.cli.main import app as cli
from reinforge.config import load_config
from reinforge.launcher.serve import build_server
from reinforge.models.openai_api import server as openai_server

REPO = Path(__file__).resolve().parents[2]
MOCK_CONFIG = REPO / "examples" / "arithmetic" / "explore_mock.yaml"
CHAT = {"model": "any", "messages": [{"role": "user", "content": "What is 2 + 3?"}]}


def test_serve_help_lists_the_options() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "reinforge.cli.main", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    for option in ("--config", "--host", "--port", "--api-key", "--served-model-name"):
        assert option in proc.stdout
    assert "REINFORGE_API_KEY" in proc.stdout
    assert "127.0.0.1" in proc.stdout and "8000" in proc.stdout


def test_build_server_from_the_example_config() -> None:
    server = build_server(load_config(MOCK_CONFIG), served_model_name="arith")
    try:
        assert server.model.enable_history is False
        with TestClient(server.app, base_url="http://127.0.0.1") as http:
            assert http.get("/v1/models").json()["data"][0]["id"] == "arith"
            body = http.post("/v1/chat/completions", json=CHAT).json()
            assert body["model"] == "arith"
            assert "\\boxed{" in body["choices"][0]["message"]["content"]
            assert body["prompt_token_ids"] and body["choices"][0]["token_ids"]
    finally:
        server.close()


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Replaces uvicorn: records the app and socket ``reinforge serve`` would serve."""
    seen: dict[str, Any] = {}

    def fake_run(app: Any, *, sock: socket.socket, **kwargs: Any) -> None:
        seen.update(app=app, port=sock.getsockname()[1], host=sock.getsockname()[0])
        sock.close()

    monkeypatch.setattr(openai_server, "run_server", fake_run)
    return seen


def test_serve_command_builds_the_app(
    captured: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REINFORGE_API_KEY", "from-env")
    result = CliRunner().invoke(
        cli,
        [
            "serve",
            "-c",
            str(MOCK_CONFIG),
            "--port",
            "0",
            "--served-model-name",
            "arith",
            "--set",
            "model.max_response_tokens=7",
        ],
    )
    assert result.exit_code == 0, result.output
    assert captured["host"] == "127.0.0.1"
    assert f"http://127.0.0.1:{captured['port']}/v1" in result.output
    with TestClient(captured["app"], base_url="http://127.0.0.1") as http:
        assert http.get("/health").status_code == 200
        assert http.post("/v1/chat/completions", json=CHAT).status_code == 401
        ok = http.post(
            "/v1/chat/completions", json=CHAT, headers={"Authorization": "Bearer from-env"}
        )
        assert ok.status_code == 200
        assert ok.json()["model"] == "arith"
        assert len(ok.json()["choices"][0]["token_ids"]) <= 7  # --set reached the model


def flat(output: str) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(output.split())


def test_serve_user_errors_exit_2(captured: dict[str, Any], tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["serve", "-c", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "does not exist" in flat(missing.output)

    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  engine: warp-drive\n")
    result = runner.invoke(cli, ["serve", "-c", str(bad)])
    assert result.exit_code == 2 and "model.engine" in flat(result.output)

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = runner.invoke(cli, ["serve", "-c", str(MOCK_CONFIG), "--port", str(port)])
    assert result.exit_code == 2 and "cannot listen" in flat(result.output)
    assert "app" not in captured
