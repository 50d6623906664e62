"""A test-only experience operator (loaded as a config plugin): a reward that varies
where the tiny random model earns nothing.

The example workflows score the tiny random model's replies the same everywhere (0,
or -0.1 for an unfinished WebShop episode), so every GRPO group is flat and every
advantage 0: a "training" step on such a batch has no gradient, and a test built on
it passes whether or not the optimizer steps. This operator replaces each
experience's reward with the mean id of the tokens the model sampled in it, scaled
into [0, 1): two runs that sampled different tokens get different rewards, so every
group has variance and the advantages are not 0. The workflow's own reward is kept
in ``info["original_reward"]``.
"""

from __future__ import annotations

from reinforge.buffer.operators import EXPERIENCE_OPERATORS, ExperienceOperatorV1

NAME = "sampled_token_reward"
#: larger than any token id of SmolLM2's vocabulary (49152)
SCALE = 65536.0


@EXPERIENCE_OPERATORS.register_module(NAME)
class SampledTokenReward(ExperienceOperatorV1):
    """``reward = mean(sampled token ids) / SCALE`` (see the module docstring)."""

    async def process(self, exps):
        for exp in exps:
            exp.info.setdefault("original_reward", exp.reward)
            sampled = exp.tokens[exp.prompt_length :][exp.action_mask.bool()]
            exp.reward = float(sampled.float().mean()) / SCALE if len(sampled) else 0.0
        return exps, {}
