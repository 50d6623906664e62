"""Token ids in, token ids out over the OpenAI completions API (with vLLM's extensions).

A rollout engine must return the exact ids it sampled and their log-probabilities,
or the trainer would score different tokens than the ones the policy produced. The
completions endpoint of vLLM (and of ``reinforge serve``) takes a prompt given as
token ids and, with ``return_token_ids``, answers with the sampled ids; ``logprobs:
0`` adds the log-probability of each sampled token. Servers that leave either out
are refused with a ``ServerProtocolError`` that names the server and the field.
"""

from __future__ import annotations

from typing import Any

from reinforge.models.engine import Completion, SamplingParams

_TOKEN_ID_PREFIX = "token_id:"


class ServerProtocolError(RuntimeError):
    """The server's answer lacks something a token-exact rollout needs."""


def completion_body(model: str, prompt_ids: list[int], params: SamplingParams) -> dict[str, Any]:
    """The ``/v1/completions`` request that samples ``params.n`` continuations of ``prompt_ids``."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": list(prompt_ids),
        "n": params.n,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "max_tokens": params.max_tokens,
        "logprobs": params.top_logprobs,
        "return_token_ids": True,
        "skip_special_tokens": False,
    }
    if params.top_logprobs:
        body["return_tokens_as_token_ids"] = True
    if params.top_k > 0:
        body["top_k"] = params.top_k
    if params.seed is not None:
        body["seed"] = params.seed
    if params.stop:
        body["stop"] = list(params.stop)
    if params.stop_token_ids:
        body["stop_token_ids"] = list(params.stop_token_ids)
    return body


def score_body(model: str, token_ids: list[int]) -> dict[str, Any]:
    """A request whose ``prompt_logprobs`` give log p(token_ids[i] | token_ids[:i])."""
    return {
        "model": model,
        "prompt": list(token_ids),
        "max_tokens": 1,
        "temperature": 0.0,
        "prompt_logprobs": 0,
    }


def _field(obj: dict[str, Any], key: str, server: str, what: str) -> Any:
    value = obj.get(key)
    if value is None:
        raise ServerProtocolError(
            f"server {server} returned no '{key}' in {what}; reinforge needs the sampled token "
            "ids and their logprobs (vLLM >= 0.10 with return_token_ids, or reinforge serve)"
        )
    return value


def _top_row(row: dict[str, float] | None, server: str) -> list[tuple[int, float]]:
    pairs = []
    for key, logprob in (row or {}).items():
        if not key.startswith(_TOKEN_ID_PREFIX):
            raise ServerProtocolError(
                f"server {server} returned top_logprobs keyed by text ({key!r}); "
                "it must honour return_tokens_as_token_ids"
            )
        pairs.append((int(key[len(_TOKEN_ID_PREFIX) :]), float(logprob)))
    pairs.sort(key=lambda p: -p[1])
    return pairs


def parse_completions(
    body: dict[str, Any], params: SamplingParams, server: str
) -> list[Completion]:
    """The ``Completion`` objects of a completions response, in choice order."""
    choices = sorted(_field(body, "choices", server, "the response"), key=lambda c: c["index"])
    if len(choices) != params.n:
        raise ServerProtocolError(
            f"server {server} returned {len(choices)} choices, asked for {params.n}"
        )
    out = []
    for choice in choices:
        ids = [int(t) for t in _field(choice, "token_ids", server, "a choice")]
        logprobs = _field(choice, "logprobs", server, "a choice")
        values = [
            float(x) for x in _field(logprobs, "token_logprobs", server, "a choice's logprobs")
        ]
        if len(values) != len(ids):
            raise ServerProtocolError(
                f"server {server} returned {len(values)} logprobs for {len(ids)} tokens"
            )
        tops = None
        if params.top_logprobs:
            rows = logprobs.get("top_logprobs") or []
            tops = [_top_row(row, server)[: params.top_logprobs] for row in rows]
        reason = choice.get("finish_reason") or "stop"
        finish = "length" if reason == "length" else "stop"
        # reinforge serve says which weights sampled the choice; vLLM does not (None)
        version = choice.get("model_version")
        version = None if version is None else int(version)
        out.append(Completion(ids, values, finish, tops, version))
    return out


def parse_prompt_logprobs(body: dict[str, Any], token_ids: list[int], server: str) -> list[float]:
    """log p(token_ids[i] | token_ids[:i]) for i >= 1 from a ``prompt_logprobs`` response."""
    choice = _field(body, "choices", server, "the response")[0]
    rows = _field(choice, "prompt_logprobs", server, "a choice")
    if len(rows) != len(token_ids):
        raise ServerProtocolError(
            f"server {server} returned {len(rows)} prompt logprobs for {len(token_ids)} tokens"
        )
    out = []
    for tid, row in zip(token_ids[1:], rows[1:], strict=True):
        entry = (row or {}).get(str(tid))
        if entry is None:
            raise ServerProtocolError(f"server {server} gave no prompt logprob for token {tid}")
        out.append(float(entry["logprob"] if isinstance(entry, dict) else entry))
    return out


def stamp_version(completions: list[Completion], version: int) -> list[Completion]:
    """Give completions the server did not date ``version``: the engine's weight version
    when the request was sent. A sync that lands while the request runs makes the later
    tokens newer, never older, so the send-time version is the oldest weights that
    sampled any token (what ``trainer.max_staleness`` must count from)."""
    for comp in completions:
        if comp.model_version is None:
            comp.model_version = version
    return completions
