"""Trinity's ``AccuracyReward`` with a user's ``answer_parser``: a parser that raises
scores 0 and says so at WARNING (which parser, which exception)."""

from __future__ import annotations

import logging

import pytest

from reinforge.rewards.trinity_style import TrinityAccuracyReward

LOGGER = "reinforge.rewards.trinity_style.accuracy"


def last_word(text: str) -> str:
    return text.split()[-1]


def test_a_working_parser_compares_the_parsed_answers(caplog) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    reward = TrinityAccuracyReward(answer_parser=last_word)
    assert reward("so the answer is 42", truth="42") == {"accuracy": 1.0}
    assert reward("so the answer is 41", truth="42") == {"accuracy": 0.0}
    assert not caplog.records  # a wrong answer is not a failure


def test_a_parser_that_raises_scores_0_with_a_warning(caplog) -> None:
    def strict_parser(text: str) -> str:
        if "<answer>" not in text:
            raise ValueError("no <answer> tag")
        return text.split("<answer>")[1]

    caplog.set_level(logging.WARNING, logger=LOGGER)
    reward = TrinityAccuracyReward(answer_parser=strict_parser)
    assert reward("42", truth="<answer>42") == {"accuracy": 0.0}
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "strict_parser" in message  # where: the parser, by name
    assert "ValueError: no <answer> tag" in message  # what


@pytest.mark.parametrize("parser", [last_word, lambda text: text.split()[-1]])
def test_the_warning_names_any_parser(caplog, parser) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    assert TrinityAccuracyReward(answer_parser=parser)("", truth="x") == {"accuracy": 0.0}
    assert not caplog.records  # an empty response is 0 before any parser runs
    assert TrinityAccuracyReward(answer_parser=parser)(" ", truth="x") == {"accuracy": 0.0}
    (record,) = caplog.records
    assert "IndexError" in record.getMessage()
    assert parser.__qualname__ in record.getMessage()


def test_a_parser_compares_off_the_main_thread_as_explore_calls_it() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from math_verify import parse

    reward = TrinityAccuracyReward(answer_parser=parse)
    with ThreadPoolExecutor(1) as pool:  # the runners call rewards in worker threads
        right = pool.submit(reward, response="So $x = \\frac{1}{2}$", truth="$0.5$").result()
        wrong = pool.submit(reward, response="So $x = 3$", truth="$0.5$").result()
    assert right == {"accuracy": 1.0} and wrong == {"accuracy": 0.0}


def test_trinitys_math_reward_scores_in_a_worker_thread() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from reinforge.trinity.common.rewards import MathRewardFn

    reward = MathRewardFn()
    with ThreadPoolExecutor(1) as pool:
        scored = pool.submit(
            reward, response="<think>2+2</think> <answer>4</answer>", truth="4"
        ).result()
    assert scored["accuracy"] == 1.0
