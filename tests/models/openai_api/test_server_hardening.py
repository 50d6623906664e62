"""``reinforge serve`` under hostile input: clear 4xx, bounded requests, only its own
Host, no CORS, a usable connection after an error (issue: trust the run, 15)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from reinforge.models import MockEngine, ModelWrapper
from reinforge.models.openai_api.server import ServerThread, create_app

USER = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    app = create_app(ModelWrapper(MockEngine()).openai_service, api_key="k3y", max_body_bytes=4096)
    with ServerThread(app) as srv:
        yield srv


@pytest.fixture
def http(server: ServerThread) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=server.url, timeout=30, headers={"Authorization": "Bearer k3y"}
    ) as c:
        yield c


BAD_BODIES = {
    "role an object": {"model": "m", "messages": [{"role": {"a": 1}, "content": "hi"}]},
    "tool_calls a string": {
        "model": "m",
        "messages": [*USER, {"role": "assistant", "content": "", "tool_calls": "call it"}],
    },
    "content a number": {"model": "m", "messages": [{"role": "user", "content": 5}]},
    "content parts not objects": {"model": "m", "messages": [{"role": "user", "content": [1]}]},
    "temperature NaN": {"model": "m", "messages": USER, "temperature": float("nan")},
    "top_p Infinity": {"model": "m", "messages": USER, "top_p": float("inf")},
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_wrong_types_are_400s_and_the_connection_stays_usable(
    http: httpx.Client, case: str
) -> None:
    raw = json.dumps(BAD_BODIES[case], allow_nan=True)
    bad = http.post(
        "/v1/chat/completions", content=raw, headers={"content-type": "application/json"}
    )
    assert bad.status_code == 400, bad.text
    assert bad.json()["error"]["type"] == "invalid_request_error"
    ok = http.post("/v1/chat/completions", json={"model": "m", "messages": USER})
    assert ok.status_code == 200


OUT_OF_RANGE = {
    "prompt id -1": ("/v1/completions", {"prompt": [5, -1]}, "prompt", -1),
    "prompt id 2**40": ("/v1/completions", {"prompt": [5, 2**40]}, "prompt", 2**40),
    "one of several prompts": ("/v1/completions", {"prompt": [[5], [6, 2**40]]}, "prompt", 2**40),
    "max_tokens 2**70": (
        "/v1/completions",
        {"prompt": "hi", "max_tokens": 2**70},
        "max_tokens",
        2**70,
    ),
    "max_tokens past the context": (
        "/v1/completions",
        {"prompt": "hi", "max_tokens": 10**6},
        "max_tokens",
        10**6,
    ),
    "max_completion_tokens 2**70": (
        "/v1/chat/completions",
        {"messages": USER, "max_completion_tokens": 2**70},
        "max_completion_tokens",
        2**70,
    ),
    "n 2**70": ("/v1/completions", {"prompt": "hi", "n": 2**70}, "n", 2**70),
    "seed 2**70": ("/v1/chat/completions", {"messages": USER, "seed": 2**70}, "seed", 2**70),
    "top_k 2**70": ("/v1/chat/completions", {"messages": USER, "top_k": 2**70}, "top_k", 2**70),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_out_of_range_integers_are_400s_naming_the_field_and_value(
    http: httpx.Client, case: str
) -> None:
    path, body, field, value = OUT_OF_RANGE[case]
    bad = http.post(path, json={"model": "m", **body})
    assert bad.status_code == 400, bad.text
    error = bad.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == field
    assert f"'{field}'" in error["message"] and str(value) in error["message"]
    ok = http.post("/v1/completions", json={"model": "m", "prompt": [5, 6], "max_tokens": 4})
    assert ok.status_code == 200


def test_deep_json_huge_bodies_and_huge_fan_out_are_refused(http: httpx.Client) -> None:
    deep = http.post("/v1/completions", content="[" * 3000 + "]" * 3000)
    assert deep.status_code in (400, 413)
    deep_small = http.post("/v1/completions", content="[" * 2000 + "]" * 2000)
    assert deep_small.status_code == 400 and "nested too deeply" in deep_small.text
    big = http.post("/v1/completions", json={"model": "m", "prompt": "x" * 10_000})
    assert big.status_code == 413

    def chunks():
        for _ in range(10):
            yield b"x" * 1000

    assert http.post("/v1/completions", content=chunks()).status_code == 413
    fan_out = http.post("/v1/completions", json={"model": "m", "prompt": ["a"] * 20, "n": 100})
    assert fan_out.status_code == 400 and "samples" in fan_out.text


def test_only_requests_addressed_to_this_server_are_served(server: ServerThread) -> None:
    auth = {"Authorization": "Bearer k3y"}
    foreign = httpx.get(server.url + "/v1/models", headers={**auth, "Host": "evil.example"})
    assert foreign.status_code == 400 and "not this server" in foreign.text
    local = httpx.get(
        server.url + "/v1/models", headers={**auth, "Host": f"localhost:{server.port}"}
    )
    assert local.status_code == 200
    preflight = httpx.options(
        server.url + "/v1/chat/completions",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in preflight.headers


def test_the_bearer_scheme_is_case_insensitive(server: ServerThread) -> None:
    for header in ("Bearer k3y", "bearer k3y", "BEARER k3y"):
        assert (
            httpx.get(server.url + "/v1/models", headers={"Authorization": header}).status_code
            == 200
        )
    for header in ("Bearer wrong", "Basic k3y", "k3y"):
        assert (
            httpx.get(server.url + "/v1/models", headers={"Authorization": header}).status_code
            == 401
        )
