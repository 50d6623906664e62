"""A deterministic scripted policy: the ``mock`` engine.

It answers instantly with replies chosen by rules, attaches reproducible fake
log-probabilities, and needs no weights. Use it to develop and test workflows,
operators and the explorer without waiting for a model; it is a supported engine,
selected with ``model.engine: mock`` in YAML.

Reply rules, tried in order:

* ``replies``: a callable ``(prompt_text, sample_index) -> str``; or a dict mapping
  a regular expression to a reply (first ``re.search`` match wins; the reply may
  use ``\\1``-style group references); or a list of replies cycled by sample index.
* ``policy="arithmetic"``: find the last ``a op b`` expression (+, -, *) in the
  prompt and answer ``\\boxed{result}``; with ``error_rate`` > 0 a seeded RNG makes
  some samples off by one, so groups of samples differ in reward.
* otherwise the ``default_reply``.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from reinforge.models.engine import (
    Completion,
    InferenceEngine,
    SamplingParams,
    check_token_ids,
    done_future,
    failed_future,
)
from reinforge.models.tokenizer import ByteTokenizer

ReplyRules = Callable[[str, int], str] | dict[str, str] | list[str] | None

_ARITH = re.compile(r"(-?\d+)\s*([+\-*×x])\s*(-?\d+)")


def fake_logprob(token_id: int, position: int) -> float:
    """Reproducible pseudo log-probability of a token at a position (always < 0)."""
    return -0.05 - ((token_id * 31 + position * 17) % 97) / 100.0


class MockEngine(InferenceEngine):
    """Answers in ``submit`` itself: its futures are done when returned, so cancelling
    one is a no-op and no request is ever left running (see ``InferenceEngine``)."""

    def __init__(
        self,
        *,
        replies: ReplyRules = None,
        policy: str | None = None,
        error_rate: float = 0.0,
        default_reply: str = "I do not know.",
        seed: int = 0,
        tokenizer: Any = None,
        max_model_len: int = 4096,
    ) -> None:
        super().__init__()
        if policy not in (None, "arithmetic", "echo"):
            raise ValueError(f"unknown mock policy '{policy}'; use 'arithmetic', 'echo' or none")
        self.tokenizer = tokenizer or ByteTokenizer()
        self.replies = replies
        self.policy = policy
        self.error_rate = error_rate
        self.default_reply = default_reply
        self.seed = seed
        self.max_model_len = max_model_len
        self.requests = 0

    def _reply(self, prompt_text: str, index: int, rng: random.Random | None) -> str:
        rules = self.replies
        if callable(rules):
            return rules(prompt_text, index)
        if isinstance(rules, dict):
            for pattern, reply in rules.items():
                match = re.search(pattern, prompt_text)
                if match:
                    return match.expand(reply)
        elif isinstance(rules, list) and rules:
            return rules[index % len(rules)]
        if self.policy == "arithmetic":
            found = _ARITH.findall(prompt_text)
            if found:
                a, op, b = found[-1]
                x, y = int(a), int(b)
                value = x + y if op == "+" else x - y if op == "-" else x * y
                if rng is not None and rng.random() < self.error_rate:
                    value += rng.choice((-1, 1))
                return f"The answer is \\boxed{{{value}}}."
        if self.policy == "echo":
            return prompt_text[-200:]
        return self.default_reply

    def _check_ids(self, ids: list[int]) -> None:
        """Refuse ids outside the tokenizer's vocabulary, as the hf engine does."""
        check_token_ids(ids, getattr(self.tokenizer, "vocab_size", None))

    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Future[list[Completion]]:
        try:
            self._check_ids(prompt_ids)
        except ValueError as exc:
            return failed_future(exc)
        self.requests += 1
        prompt_text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        # Seeded per prompt (and per request seed), so the same request always
        # gets the same samples regardless of arrival order. Seeding a Mersenne
        # twister costs microseconds, so it is only done when a rule can use it.
        rng = None
        if self.error_rate > 0:
            base = params.seed if params.seed is not None else self.seed
            rng = random.Random(zlib.crc32(prompt_text.encode()) ^ (base * 2654435761 & 0xFFFFFFFF))
        budget = max(1, min(params.max_tokens, self.max_model_len - len(prompt_ids)))
        eos = self.tokenizer.eos_token_ids[0]
        start = len(prompt_ids)
        out = []
        for i in range(params.n):
            text = self._reply(prompt_text, i, rng)
            for stop in params.stop:
                cut = text.find(stop)
                if cut != -1:
                    text = text[:cut]
            ids = [*self.tokenizer.encode(text), eos]
            finish = "stop"
            if len(ids) > budget:
                ids, finish = ids[:budget], "length"
            # fake_logprob inlined (same arithmetic, so the same floats): a call per
            # token is most of this engine's cost on long replies.
            logprobs = [
                -0.05 - ((t * 31 + (start + j) * 17) % 97) / 100.0 for j, t in enumerate(ids)
            ]
            # The scripted policy knows only its own choice: the sampled token is the
            # single "most likely" alternative it can report.
            top = (
                [[(t, lp)] for t, lp in zip(ids, logprobs, strict=True)]
                if params.top_logprobs
                else None
            )
            out.append(Completion(ids, logprobs, finish, top, self._model_version))
        return done_future(out)

    scores_with_temperature = True

    def submit_score(self, token_ids: list[int], temperature: float = 1.0) -> Future[list[float]]:
        """The made-up log-probabilities ``submit`` reports for these tokens; at another
        ``temperature`` they are divided by it (there are no logits to rescale)."""
        try:
            self._check_ids(token_ids)
        except ValueError as exc:
            return failed_future(exc)
        scored = [fake_logprob(t, i) for i, t in enumerate(token_ids) if i > 0]
        if temperature != 1.0:
            scored = [lp / temperature for lp in scored]
        return done_future(scored)

    def update_weights(self, state_dict: dict[str, Any], version: int | None = None) -> None:
        self._model_version = self._model_version + 1 if version is None else version
