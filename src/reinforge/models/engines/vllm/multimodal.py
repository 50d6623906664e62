"""Prompts with images on vLLM: token ids and images in, token ids out.

vLLM's completions endpoint takes no images, so such a prompt goes to its
token-in/token-out endpoint ``/inference/v1/generate`` (a server started with
``--enable-scale-out``): the chat template's ids with one placeholder per image,
plus the images as ``image_url`` content parts (``data:`` URLs: nothing is
fetched). vLLM runs the model's processor and hands the images to the model as its
``multi_modal_data``. It answers with the prompt ids after expanding the
placeholders, which must equal the ids reinforge's processor made (those the
experience records and the trainer re-scores, with its own ``pixel_values``): a
server whose expansion differs is refused with a ``ServerProtocolError`` rather
than trained on. A server that does not send the expanded ids cannot be checked:
its samples are used, and a WARNING (once per server) says so.
"""

from __future__ import annotations

import logging
from typing import Any

from reinforge.models.engine import Completion, ImageSource, SamplingParams
from reinforge.models.engines.openai.protocol import ServerProtocolError

GENERATE_PATH = "/inference/v1/generate"
#: the server flag that mounts ``GENERATE_PATH``
SCALE_OUT_FLAG = "--enable-scale-out"

logger = logging.getLogger(__name__)
#: servers already warned about for answering without ``prompt_token_ids``
_UNCHECKED_SERVERS: set[str] = set()


def generate_body(model: str, source: ImageSource, params: SamplingParams) -> dict[str, Any]:
    """The request that samples ``params.n`` continuations of a prompt with images."""
    sampling: dict[str, Any] = {
        "n": params.n,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "max_tokens": params.max_tokens,
        "logprobs": params.top_logprobs,
        "skip_special_tokens": False,
    }
    if params.top_k > 0:
        sampling["top_k"] = params.top_k
    if params.seed is not None:
        sampling["seed"] = params.seed
    if params.stop:
        sampling["stop"] = list(params.stop)
    if params.stop_token_ids:
        sampling["stop_token_ids"] = list(params.stop_token_ids)
    return {
        "model": model,
        "token_ids": list(source.unexpanded_ids),
        "content_parts": [{"type": "image_url", "url": url} for url in source.image_urls],
        "sampling_params": sampling,
        "return_token_ids": True,
        "output_mode": "tokens",
    }


def parse_generate(
    body: dict[str, Any], params: SamplingParams, server: str, prompt_ids: list[int]
) -> list[Completion]:
    """The completions of a generate response, after checking its expanded prompt.

    A server that sends no ``prompt_token_ids`` cannot be checked: its samples are
    used as they are, with one WARNING per server saying so."""
    expanded = body.get("prompt_token_ids")
    if expanded is None:
        if server not in _UNCHECKED_SERVERS:
            _UNCHECKED_SERVERS.add(server)
            logger.warning(
                "server %s answered an image prompt without prompt_token_ids: whether it "
                "expanded the images into the prompt ids reinforge records (and the "
                "trainer re-scores) cannot be checked; the samples are used unchecked",
                server,
            )
    elif list(expanded) != list(prompt_ids):
        raise ServerProtocolError(
            f"server {server} expanded the images into {len(expanded)} prompt tokens, "
            f"reinforge's processor into {len(prompt_ids)}: the trainer could not re-score "
            "this sample (is the server's model folder the policy's?)"
        )
    choices = sorted(body.get("choices") or [], key=lambda c: c["index"])
    if len(choices) != params.n:
        raise ServerProtocolError(
            f"server {server} returned {len(choices)} choices, asked for {params.n}"
        )
    out = []
    for choice in choices:
        ids = [int(t) for t in choice.get("token_ids") or []]
        content = (choice.get("logprobs") or {}).get("content") or []
        if len(content) != len(ids):
            raise ServerProtocolError(
                f"server {server} returned {len(content)} logprobs for {len(ids)} tokens"
            )
        values = [float(entry["logprob"]) for entry in content]
        tops = None
        if params.top_logprobs:
            tops = [
                sorted(
                    ((int(t["token_id"]), float(t["logprob"])) for t in e.get("top_logprobs", [])),
                    key=lambda p: -p[1],
                )[: params.top_logprobs]
                for e in content
            ]
        reason = "length" if choice.get("finish_reason") == "length" else "stop"
        out.append(Completion(ids, values, reason, tops))
    return out
