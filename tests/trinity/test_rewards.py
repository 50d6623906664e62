"""Trinity-RFT's reward classes, called the way Trinity-RFT workflows call them."""

from __future__ import annotations

import json
import sys

import pytest

from reinforge.trinity.common.rewards import (
    REWARD_FUNCTIONS,
    AccuracyReward,
    CountDownRewardFn,
    FormatReward,
    MathBoxedRewardFn,
    MathDAPORewardFn,
    MathRewardFn,
    RewardFn,
    RMGalleryFn,
)
from reinforge.trinity.common.rewards.math_reward import MathBoxedRewardFn as FromSubmodule


def test_math_boxed_scores_like_trinity() -> None:
    reward_fn = MathBoxedRewardFn()
    assert reward_fn(response="so \\boxed{42}", truth="42") == {
        "accuracy": 1.0,
        "format_score": 0.0,
    }
    assert reward_fn(response="so \\boxed{41}", truth="42") == {
        "accuracy": 0.0,
        "format_score": 0.0,
    }
    # no box: 0.0 in total, no format penalty without with_think
    assert sum(reward_fn(response="it is 42", truth="42").values()) == 0.0
    # the truth may be boxed too
    assert reward_fn(response="\\boxed{\\frac{1}{2}}", truth="\\boxed{0.5}")["accuracy"] == 1.0


def test_math_boxed_with_think_gives_the_format_penalty() -> None:
    reward_fn = MathBoxedRewardFn()
    no_think = reward_fn(response="\\boxed{3}", truth="3", with_think=True, format_score_coef=0.2)
    assert no_think == {"accuracy": 1.0, "format_score": -0.2}
    with_think = reward_fn(response="<think>1+2</think> \\boxed{3}", truth="3", with_think=True)
    assert with_think == {"accuracy": 1.0, "format_score": 0.0}


def test_positional_prompt_comes_before_truth() -> None:
    assert MathBoxedRewardFn()("\\boxed{7}", "What is 3+4?", "7")["accuracy"] == 1.0
    assert AccuracyReward()("the answer is \\boxed{7}", None, "7") == {"accuracy": 1.0}
    assert AccuracyReward()("the answer is \\boxed{8}", None, "7") == {"accuracy": 0.0}


def test_math_reward_fn_reads_the_answer_block_and_the_layout() -> None:
    reward_fn = MathRewardFn()
    good = reward_fn("<think>3 quarters</think>\n<answer>3/4</answer>", truth="0.75")
    assert good == {"accuracy": 1.0, "format_score": 0.1}
    bad = reward_fn("3/4", truth="0.75")
    assert bad["format_score"] == -0.1


def test_format_reward_default_pattern_wants_lines() -> None:
    assert FormatReward()("<think>\nhm\n</think>\n<answer>\n1\n</answer>") == {"format_score": 0.1}
    assert FormatReward()("<think>hm</think><answer>1</answer>") == {"format_score": -0.1}


def test_countdown_scores_on_the_last_line() -> None:
    truth = json.dumps({"target": 24, "numbers": [2, 3, 4]})
    reward_fn = CountDownRewardFn()
    assert reward_fn("thinking\n<answer>2*3*4</answer>", truth=truth) == {"score": 1.0}
    assert reward_fn("<answer>2+3+4</answer>", truth=truth) == {"score": 0.1}
    assert reward_fn("<answer>2*3*4*1</answer>", truth=truth) == {"score": 0.1}
    assert reward_fn("<answer>2*3*4</answer>\nthat is all", truth=truth) == {"score": 0.0}


def test_dapo_overlong_penalty() -> None:
    reward_fn = MathDAPORewardFn(
        enable_overlong_penalty=True, penalty_factor=1.0, max_response_length=100, cache_length=20
    )
    assert reward_fn("\\boxed{1}", [0] * 50, "1") == {"accuracy": 1.0, "format_score": 0.0}
    assert reward_fn("\\boxed{1}", [0] * 90, "1")["format_score"] == pytest.approx(-0.5)
    assert reward_fn("\\boxed{2}", [0] * 101, "1") == {"accuracy": 0.0, "format_score": -1.0}
    with pytest.raises(ValueError, match="cache_length"):
        MathDAPORewardFn(enable_overlong_penalty=True)


def test_registry_and_subclassing() -> None:
    assert REWARD_FUNCTIONS.get("math_dapo_reward") is MathDAPORewardFn
    assert REWARD_FUNCTIONS.get("rm_gallery_reward") is RMGalleryFn
    assert FromSubmodule is MathBoxedRewardFn

    @REWARD_FUNCTIONS.register_module("trinity_style_length_reward", force=True)
    class LengthReward(RewardFn):
        def __init__(self, **kwargs):
            pass

        def __call__(self, response, prompt=None, truth=None, **kwargs):
            return {"length": float(len(response))}

    assert REWARD_FUNCTIONS.get("trinity_style_length_reward")()("abc") == {"length": 3.0}


def test_rm_gallery_without_its_package_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = [name for name in sys.modules if name.startswith("rm_gallery.")]
    for name in ["rm_gallery", *loaded]:  # as if it were not installed
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match="rm-gallery"):
        RMGalleryFn(reward_name="base_helpfulness_listwise")
