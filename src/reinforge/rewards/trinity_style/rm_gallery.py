"""Trinity-RFT's ``RMGalleryFn``: a reward model from the RM-Gallery package (``rm-gallery``)."""

from __future__ import annotations

import importlib
from typing import Any

from reinforge.rewards.reward_fn import REWARD_FUNCTIONS, RewardFn

_MISSING = (
    "RMGalleryFn needs the RM-Gallery package, which is not installed: "
    "pip install rm-gallery (module 'rm_gallery')"
)


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(_MISSING) from exc


@REWARD_FUNCTIONS.register_module("rm_gallery_reward")
class RMGalleryFn(RewardFn):
    """Scores an experience with the RM-Gallery reward named ``reward_name``.

    Called as ``fn(experience, messages, ground_truth=...)``; returns one entry per
    scored dimension of the reward model's result, or ``{"reward": score}``.
    """

    def __init__(self, reward_name: str, **kwargs: Any) -> None:
        super().__init__(reward_name=reward_name, **kwargs)
        registry = _import("rm_gallery.core.reward.registry").RewardRegistry
        known = getattr(registry, "_registry", None)
        if isinstance(known, dict) and reward_name not in known:
            raise ValueError(
                f"RM-Gallery has no reward named {reward_name!r}; it has: "
                + ", ".join(sorted(known))
            )
        self.reward_model = registry.get(reward_name)(**kwargs)

    def __call__(self, experience: Any, messages: list[Any], **kwargs: Any) -> dict[str, float]:  # type: ignore[override]
        schema = _import("rm_gallery.core.data.schema")
        answer = schema.Step(
            role="assistant",
            content=str(experience.response_text),
            label={"reference": kwargs.get("ground_truth", "")},
        )
        sample = schema.DataSample(
            unique_id="0",
            input=[schema.ChatMessage(**m) if isinstance(m, dict) else m for m in messages],
            output=[schema.DataOutput(answer=answer)],
            metadata=experience.info,
        )
        scored = self.reward_model.evaluate(sample, **kwargs)
        return self._scores(scored)

    @staticmethod
    def _scores(sample: Any) -> dict[str, float]:
        outputs = getattr(sample, "output", None)
        answer = outputs[0].answer if outputs else None
        reward = getattr(answer, "reward", None)
        if reward is None:
            return {}
        details = getattr(reward, "details", None) or []
        scores = {d.name: d.score for d in details if hasattr(d, "score")}
        return scores or {"reward": reward.score}
