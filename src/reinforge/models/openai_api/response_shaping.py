"""Experiences into OpenAI response bodies and server-sent-event chunks.

Like vLLM, responses carry the token ids: ``prompt_token_ids`` at the top level and
``token_ids`` in each choice. Streaming sends the finished completion as a
sequence of chunks (one per sampled token): the engines sample whole completions,
so the first chunk arrives when the last token is known.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from reinforge.models.openai_api.request_parsing import ParsedRequest

if TYPE_CHECKING:
    from reinforge.core import Experience
    from reinforge.models.model_wrapper import ModelWrapper


class ResponseShaper:
    """Builds the response bodies of one wrapper's samples (its tokenizer spells tokens)."""

    def __init__(self, model: ModelWrapper) -> None:
        self.model = model

    def _token_text(self, token_id: int) -> str:
        return self.model.tokenizer.decode([token_id], skip_special_tokens=False)

    def _chat_logprobs(self, exp: Experience, call: ParsedRequest) -> dict[str, Any] | None:
        if not call.logprobs:
            return None
        ids = exp.response_tokens.tolist()
        lps = exp.logprobs.tolist()
        tops = exp.info.get("top_logprobs") or [[] for _ in ids]
        content = []
        for tid, lp, top in zip(ids, lps, tops, strict=True):
            text = self._token_text(tid)
            content.append(
                {
                    "token": text,
                    "logprob": lp,
                    "bytes": list(text.encode()),
                    "top_logprobs": [
                        {
                            "token": (t := self._token_text(a)),
                            "logprob": b,
                            "bytes": list(t.encode()),
                        }
                        for a, b in top[: call.top_logprobs]
                    ],
                }
            )
        return {"content": content}

    def _usage(self, exps: list[Experience], n: int) -> dict[str, int]:
        """Token counts; the ``n`` samples of a prompt count its tokens once."""
        prompt = sum(e.prompt_length for e in exps[::n])
        completion = sum(e.response_length for e in exps)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def chat_body(
        self, exps: list[Experience], call: ParsedRequest, served_name: str
    ) -> dict[str, Any]:
        """The ``chat.completion`` body of the sampled experiences."""
        choices = []
        for i, exp in enumerate(exps):
            message: dict[str, Any] = {"role": "assistant", "content": exp.response_text}
            finish = exp.info.get("finish_reason", "stop")
            calls = exp.info.get("tool_calls")
            if calls:
                message = {
                    "role": "assistant",
                    "content": exp.messages[-1].get("content"),
                    "tool_calls": calls,
                }
                finish = "tool_calls"
            choice = {
                "index": i,
                "message": message,
                "logprobs": self._chat_logprobs(exp, call),
                "finish_reason": finish,
                "token_ids": exp.response_tokens.tolist(),
                # reinforge's extension, like token_ids: the weights that sampled it
                "model_version": exp.info.get("model_version"),
            }
            exp.info.pop("top_logprobs", None)  # answered; not worth storing
            choices.append(choice)
        return {
            "id": "chatcmpl-" + uuid.uuid4().hex,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served_name,
            "choices": choices,
            "usage": self._usage(exps, call.kwargs["n"]),
            "prompt_token_ids": exps[0].prompt_tokens.tolist() if exps else [],
        }

    def completion_body(
        self, exps: list[Experience], call: ParsedRequest, served_name: str
    ) -> dict[str, Any]:
        """The ``text_completion`` body of the sampled experiences."""
        choices = []
        for i, exp in enumerate(exps):
            logprobs = None
            if call.logprobs:
                ids = exp.response_tokens.tolist()
                tokens = [self._token_text(t) for t in ids]
                offsets, pos = [], 0
                for t in tokens:
                    offsets.append(pos)
                    pos += len(t)
                tops = exp.info.get("top_logprobs")
                logprobs = {
                    "tokens": tokens,
                    "token_logprobs": exp.logprobs.tolist(),
                    "top_logprobs": None
                    if tops is None
                    else [
                        {self._token_text(a): b for a, b in row[: call.top_logprobs]}
                        for row in tops
                    ],
                    "text_offset": offsets,
                }
            exp.info.pop("top_logprobs", None)
            choices.append(
                {
                    "index": i,
                    "text": exp.response_text,
                    "logprobs": logprobs,
                    "finish_reason": exp.info.get("finish_reason", "stop"),
                    "token_ids": exp.response_tokens.tolist(),
                    "prompt_token_ids": exp.prompt_tokens.tolist(),
                    "model_version": exp.info.get("model_version"),
                }
            )
        return {
            "id": "cmpl-" + uuid.uuid4().hex,
            "object": "text_completion",
            "created": int(time.time()),
            "model": served_name,
            "choices": choices,
            "usage": self._usage(exps, call.kwargs["n"]),
        }

    def chat_events(self, body: dict[str, Any], call: ParsedRequest) -> list[dict[str, Any]]:
        """The chunks a streaming client receives for a finished chat completion."""
        base = {k: body[k] for k in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"
        events = []
        for choice in body["choices"]:
            idx, message = choice["index"], choice["message"]
            events.append(
                {
                    **base,
                    "choices": [
                        {
                            "index": idx,
                            "delta": {"role": "assistant", "content": ""},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ],
                }
            )
            pieces = self._pieces(choice["token_ids"], message.get("content") or "")
            lp = (choice.get("logprobs") or {}).get("content")
            for k, piece in enumerate(pieces):
                chunk_lp = {"content": [lp[k]]} if lp and k < len(lp) else None
                events.append(
                    {
                        **base,
                        "choices": [
                            {
                                "index": idx,
                                "delta": {"content": piece},
                                "logprobs": chunk_lp,
                                "finish_reason": None,
                            }
                        ],
                    }
                )
            if message.get("tool_calls"):
                deltas = [{"index": j, **call_} for j, call_ in enumerate(message["tool_calls"])]
                events.append(
                    {
                        **base,
                        "choices": [
                            {
                                "index": idx,
                                "delta": {"tool_calls": deltas},
                                "logprobs": None,
                                "finish_reason": None,
                            }
                        ],
                    }
                )
            events.append(
                {
                    **base,
                    "choices": [
                        {
                            "index": idx,
                            "delta": {},
                            "logprobs": None,
                            "finish_reason": choice["finish_reason"],
                        }
                    ],
                }
            )
        if call.include_usage:
            events.append({**base, "choices": [], "usage": body["usage"]})
        return events

    def _pieces(self, token_ids: list[int], content: str) -> list[str]:
        """``content`` cut at token boundaries (one piece per sampled token where possible)."""
        pieces: list[str] = []
        done = 0
        decode = self.model.tokenizer.decode
        for k in range(1, len(token_ids) + 1):
            if done >= len(content):
                break
            text = decode(token_ids[:k])
            end = min(len(text), len(content))
            if end > done and content.startswith(text[done:end], done):
                pieces.append(content[done:end])
                done = end
        if done < len(content):
            pieces.append(content[done:])
        return pieces

    def completion_events(self, body: dict[str, Any], call: ParsedRequest) -> list[dict[str, Any]]:
        """The chunks a streaming client receives for a finished completion."""
        events = []
        for choice in body["choices"]:
            events.append(
                {
                    **{k: body[k] for k in ("id", "created", "model", "object")},
                    "choices": [{**choice}],
                }
            )
        if call.include_usage:
            events.append(
                {k: body[k] for k in ("id", "created", "model", "object")}
                | {"choices": [], "usage": body["usage"]}
            )
        return events
