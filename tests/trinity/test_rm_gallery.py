"""``RMGalleryFn`` scoring through the real RM-Gallery package, with its rule-based
rewards (``accuracy``, ``math_verify_reward``: no model, no network).

RM-Gallery's declared dependencies would break reinforge's (transformers<5, openai<2),
so ``make test`` installs it with ``--no-deps`` beside the modules it imports (the
``rmgallery`` extra, in ``dev``); it is a wing (tests/conftest.py): without it this
module is skipped, and fails under CI. ``tests/trinity/test_rewards.py`` checks the
error that names the package.
"""

from __future__ import annotations

import os
import tempfile

import pytest
import torch

from reinforge.core import Experience
from reinforge.trinity.common.rewards import RMGalleryFn

# rm-gallery writes ./log/rm_gallery.log when imported: import it elsewhere than the checkout
_cwd = os.getcwd()
with tempfile.TemporaryDirectory(prefix="rm-gallery-", ignore_cleanup_errors=True) as _log_dir:
    os.chdir(_log_dir)
    try:
        pytest.importorskip("rm_gallery")
        pytest.importorskip("loguru").logger.complete()  # its log file opens on the first write
    finally:
        os.chdir(_cwd)

MESSAGES = [{"role": "user", "content": "What is 6 * 7?"}]


def _experience(response: str) -> Experience:
    return Experience(
        tokens=torch.tensor([1, 2, 3, 4]),
        prompt_length=2,
        response_text=response,
        info={"taskset": "arithmetic"},
    )


def test_an_exact_match_reward_scores_the_response_against_the_truth() -> None:
    fn = RMGalleryFn(reward_name="accuracy")
    assert fn(_experience("42"), MESSAGES, ground_truth="42") == {"accuracy": 1.0}
    assert fn(_experience("41"), MESSAGES, ground_truth="42") == {"accuracy": 0.0}


def test_a_math_reward_verifies_the_answer() -> None:
    fn = RMGalleryFn(reward_name="math_verify_reward")
    assert fn(_experience("\\boxed{42}"), MESSAGES, ground_truth="42") == {"math_verify": 1.0}
    assert fn(_experience("\\boxed{41}"), MESSAGES, ground_truth="42") == {"math_verify": 0.0}


def test_an_unknown_reward_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no reward named 'no_such_reward'.*accuracy"):
        RMGalleryFn(reward_name="no_such_reward")
