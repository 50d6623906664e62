"""The checks of ``reinforge doctor``: each looks at one way a run can learn from the
wrong thing without failing, and returns a ``Finding``.

Kept apart from the command (``doctor_cmd``), which samples the rollouts these checks
read; every check here is a function of what it is given, so a test can hand it a
broken piece (a template, a parser, a workflow) and see it fail.

* ``template_finding``: the chat template is append-only (``check-template``'s code);
* ``tool_call_finding``: a tool call rendered by the model's template parses back to
  the same call with the parser that turns replies into ``tool_calls``;
* ``sampling_finding``: tokens drawn with top-p/top-k (or a temperature) come from a
  renormalised distribution, while the engine's log-probs and the trainer's ratio are
  those of the raw one; reinforge neither masks nor corrects the ratio for that;
* ``token_finding``: every turn the trainer will see is token for token (and
  log-prob for log-prob) what the engine sampled for that exact prompt;
* ``reward_finding``: the reward varies over the sampled rollouts;
* ``logprob_gap_finding``: the sampler's log-probs against the trainer's forward.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from reinforge.core import Experience

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"

#: a turn's log-probs in the experience may differ from the engine's by float32
#: round-off only (the builder stores them as float32)
LOGPROB_COPY_TOLERANCE = 1e-4
#: the sampler-vs-trainer gap (nats, per token): a mean above GAP_FAIL_MEAN means engine
#: and trainer do not hold the same policy (other weights, a broken dtype); above the
#: warning levels, numerics (a bf16 engine against an fp32 trainer shows ~0.01-0.04)
GAP_FAIL_MEAN = 0.25
GAP_WARN_MEAN = 0.05
GAP_WARN_MAX = 1.0


@dataclass
class Finding:
    """One line of the doctor's report."""

    check: str
    status: str
    detail: str


# ---- the chat template -------------------------------------------------------------------


def template_finding(tokenizer: Any) -> Finding:
    """``check-template`` on the engine's tokenizer: multi-turn experiences are token
    exact only when each rendering extends the one before."""
    from reinforge.models.template_check import check_template

    report = check_template(tokenizer)
    checked = len(report.checked)
    if report.append_only:
        return Finding("chat template", PASS, f"append-only ({checked} sample conversations)")
    problems = "; ".join(report.problems[:2])
    return Finding(
        "chat template",
        FAIL,
        f"NOT append-only: {problems} (multi-turn histories fall back to one experience "
        "per turn; see reinforge check-template)",
    )


# ---- tool calls ----------------------------------------------------------------------------


def _call_key(call: dict[str, Any]) -> tuple[Any, Any]:
    fn = call.get("function", call)
    args = fn.get("arguments", {})
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    return fn.get("name"), json.dumps(args, sort_keys=True) if isinstance(args, dict) else args


def tool_call_finding(tokenizer: Any, parser: Callable[[str], Any] | None = None) -> Finding:
    """Render an assistant tool call with the model's template (or reinforge's
    ``<tool_call>`` format where the template has no tool support), take the reply text
    the model would have to write, and parse it with ``parser`` (default: the one the
    wrapper turns sampled replies into ``tool_calls`` with)."""
    from reinforge.models.template_check import _CALL, _TOOLS
    from reinforge.models.tool_format import render_messages

    if parser is None:
        from reinforge.models.wrapper import experiences

        parser = experiences.parse_tool_calls
    user = [{"role": "user", "content": "Weather in Paris?"}]
    called = [*user, {"role": "assistant", "content": None, "tool_calls": [_CALL]}]
    try:
        prompt = render_messages(tokenizer, user, _TOOLS, True)
        through = render_messages(tokenizer, called, _TOOLS, False)
    except Exception as exc:  # a template may reject tools or tool calls
        return Finding("tool calls", FAIL, f"the chat template cannot render a tool call: {exc}")
    reply = through[len(prompt) :] if through.startswith(prompt) else through
    parsed = parser(reply)
    got = [_call_key(c) for c in (getattr(parsed, "tool_calls", None) or [])]
    if got == [_call_key(_CALL)]:
        return Finding(
            "tool calls", PASS, f"a rendered call parses back to the same call ({got[0][0]})"
        )
    return Finding(
        "tool calls",
        FAIL,
        f"the template writes the call as {reply.strip()[:120]!r}; the parser read "
        f"{got or 'no call'} from it: sampled tool calls would be lost",
    )


# ---- sampling settings ---------------------------------------------------------------------


def sampling_finding(
    temperature: float, top_p: float, top_k: int, policy_loss: str | None
) -> Finding:
    """Whether the trainer's ratio matches the distribution the tokens were drawn from.

    Engines report each token's log-probability under the raw model (temperature 1, no
    top-p/top-k), and the trainer's π_old and π_θ are the same raw quantity. Tokens
    drawn with top-p/top-k come from the renormalised, truncated distribution, so the
    importance ratio is not the one of the behaviour policy; reinforge neither masks the
    truncated tokens nor corrects the ratio for it (``sampler_correction`` corrects
    numerics, not the truncation). ``policy_loss`` None: the config does not train."""
    stated = f"top_p={top_p:g}, top_k={top_k}, temperature={temperature:g}"
    if policy_loss is None:
        return Finding("sampling", PASS, f"{stated}; nothing is trained on these rollouts")
    from reinforge.algorithms.policy_loss import RATIO_FREE_LOSSES

    if policy_loss in RATIO_FREE_LOSSES:
        return Finding("sampling", PASS, f"{stated}; the '{policy_loss}' loss uses no ratio")
    if top_p < 1.0 or top_k > 0:
        return Finding(
            "sampling",
            FAIL,
            f"{stated}: tokens come from the top-p/top-k renormalised distribution, but the "
            f"'{policy_loss}' ratio uses raw log-probs and is neither masked nor corrected "
            "for it; train with top_p: 1 and top_k: -1 (eval tasksets may keep them)",
        )
    if temperature != 1.0:
        return Finding(
            "sampling",
            WARN,
            f"{stated}: tokens come from logits / {temperature:g}, the ratio from the raw "
            "logits (reinforge does not rescale the trainer's logits)",
        )
    return Finding("sampling", PASS, f"{stated}: the ratio is that of the sampling distribution")


# ---- tokens --------------------------------------------------------------------------------


def _segments(mask: Sequence[int]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each run of ones in ``mask``."""
    start = None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            yield start, i
            start = None


#: what the engine sampled, by the prompt it was asked: prompt ids -> completions
SampledCalls = dict[tuple[int, ...], list[Any]]


def token_finding(exps: Sequence[Experience], sampled: SampledCalls) -> Finding:
    """Each model-generated run of tokens in each experience (a turn) must be a
    completion the engine returned for exactly the tokens before it, with its
    log-probs; a re-tokenised or re-rendered turn matches no sampled call."""
    turns, bad, examples = 0, 0, []
    for exp in exps:
        if exp.multi_modal_inputs is not None or exp.response_length == 0:
            continue
        tokens = exp.tokens.tolist()
        p = exp.prompt_length
        logprobs = exp.logprobs.tolist() if exp.logprobs is not None else None
        for start, end in _segments(exp.action_mask.int().tolist()):
            turns += 1
            turn = tokens[p + start : p + end]
            calls = sampled.get(tuple(tokens[: p + start]), [])
            whole = [c for c in calls if c.token_ids == turn]
            cut = [c for c in calls if c.token_ids[: len(turn)] == turn]
            match = (whole or (cut if exp.truncate_status else []) or [None])[0]
            problem = None
            if match is None:
                problem = (
                    "not a completion the engine sampled for that prompt"
                    if calls
                    else "its prompt was never sent to the engine (re-rendered or re-tokenised)"
                )
            elif logprobs is not None:
                gap = max(
                    (abs(a - b) for a, b in zip(logprobs[start:end], match.logprobs, strict=False)),
                    default=0.0,
                )
                if gap > LOGPROB_COPY_TOLERANCE:
                    problem = f"its log-probs differ from the sampled ones by up to {gap:.3g}"
            if problem is not None:
                bad += 1
                if len(examples) < 2:
                    examples.append(
                        f"task {exp.eid.task} run {exp.eid.run} turn at {start}: {problem}"
                    )
    if turns == 0:
        return Finding("sampled tokens", FAIL, "no experience has a model-generated token")
    if bad:
        return Finding(
            "sampled tokens",
            FAIL,
            f"{bad} of {turns} turns are not the sampled ids: " + "; ".join(examples),
        )
    return Finding(
        "sampled tokens", PASS, f"{turns} turns are the sampled ids and log-probs, token for token"
    )


# ---- rewards -------------------------------------------------------------------------------


def _reward(exp: Experience) -> float | None:
    if exp.reward is not None:
        return float(exp.reward)
    if exp.token_level_reward is not None:
        return float(exp.token_level_reward.sum())
    return None


def reward_finding(exps: Sequence[Experience]) -> Finding:
    """A reward that is the same for every rollout gives every group a zero advantage:
    nothing is learned (or the reward function reads the wrong field)."""
    rewards = [r for r in (_reward(e) for e in exps) if r is not None]
    if not rewards:
        return Finding("reward", FAIL, f"none of {len(exps)} experiences has a reward")
    low, high = min(rewards), max(rewards)
    if low == high:
        return Finding(
            "reward",
            FAIL,
            f"constant: all {len(rewards)} rollouts got {low:g} (zero advantages; check the "
            "reward function and the answer key, or sample more with --rows)",
        )
    mean = sum(rewards) / len(rewards)
    return Finding(
        "reward", PASS, f"varies over {len(rewards)} rollouts: {low:g} .. {high:g}, mean {mean:.3g}"
    )


# ---- sampler against trainer ---------------------------------------------------------------


def gap_finding(mean: float, largest: float, tokens: int, stated: str) -> Finding:
    """The report line of the sampler-vs-trainer log-prob gap over ``tokens`` tokens."""
    detail = f"mean |Δ| {mean:.4f}, max {largest:.4f} nats over {tokens} tokens; {stated}"
    if mean > GAP_FAIL_MEAN:
        return Finding(
            "sampler vs trainer", FAIL, detail + " (not the same policy: weights or numerics)"
        )
    if mean > GAP_WARN_MEAN or largest > GAP_WARN_MAX:
        return Finding("sampler vs trainer", WARN, detail + " (consider sampler_correction)")
    return Finding("sampler vs trainer", PASS, detail)
