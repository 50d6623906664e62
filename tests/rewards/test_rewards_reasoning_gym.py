"""reasoning_gym_reward with real reasoning-gym entries."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reasoning_gym

from reinforge.rewards import ReasoningGymReward
from reinforge.rewards.reasoning_gym_score import get_scorer


def make_entry(name: str, seed: int = 7) -> dict[str, Any]:
    return reasoning_gym.create_dataset(name, size=1, seed=seed)[0]


@pytest.mark.parametrize("name", ["basic_arithmetic", "countdown"])
def test_right_answer_scores_one_and_wrong_less(name: str) -> None:
    entry = make_entry(name)
    assert entry["metadata"]["source_dataset"] == name
    reward = ReasoningGymReward()
    right = f"<think>working</think><answer>{entry['answer']}</answer>"
    assert reward(right, entry["answer"], raw_task=entry) == {"accuracy": 1.0}
    wrong = reward("<answer>12345678</answer>", entry["answer"], raw_task=entry)
    assert wrong["accuracy"] < 1.0


def test_answer_extraction_fallbacks() -> None:
    entry = make_entry("basic_arithmetic")
    reward = ReasoningGymReward(timeout=None)
    assert reward(f"so \\boxed{{{entry['answer']}}}", raw_task=entry) == {"accuracy": 1.0}
    assert reward(f"<think>hm</think>\n {entry['answer']} \n", raw_task=entry) == {"accuracy": 1.0}
    assert ReasoningGymReward.extract("<think>a</think> b") == "b"


def test_row_with_json_metadata_and_dataset_override() -> None:
    entry = make_entry("basic_arithmetic")
    row = {"question": entry["question"], "metadata": json.dumps(entry["metadata"], default=list)}
    reward = ReasoningGymReward(dataset="basic_arithmetic")
    assert reward(f"<answer>{entry['answer']}</answer>", entry["answer"], raw_task=row) == {
        "accuracy": 1.0
    }


def test_missing_row_or_dataset_is_an_error() -> None:
    with pytest.raises(ValueError, match="raw_task"):
        ReasoningGymReward()("<answer>1</answer>", "1")
    with pytest.raises(ValueError, match="source_dataset"):
        ReasoningGymReward()("<answer>1</answer>", raw_task={"answer": "1", "metadata": {}})


def test_unknown_dataset_scores_zero() -> None:
    row = {"answer": "1", "metadata": {"source_dataset": "no_such_dataset"}}
    assert ReasoningGymReward()("<answer>1</answer>", raw_task=row) == {"accuracy": 0.0}


def test_scorers_are_cached() -> None:
    assert get_scorer("countdown") is get_scorer("countdown")
