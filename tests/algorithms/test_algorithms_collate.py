"""collate: right padding and the shifted (next-token) alignment of per-token tensors."""

import math

import pytest
import torch

from reinforge.algorithms import collate, ppo_policy_loss
from reinforge.core import EID, Experience

PAD = 0


def _batch() -> list[Experience]:
    multi_turn = Experience(
        tokens=[11, 12, 13, 14, 15],
        prompt_length=2,  # response 13 14 15; 14 is a tool token (action_mask 0)
        action_mask=[1, 0, 1],
        logprobs=[-0.1, -0.2, -0.3],
        advantages=[1.0, 0.0, 1.0],
        reward=1.0,
        eid=EID(task=0, run=0),
    )
    short = Experience(
        tokens=[21, 22, 23, 24],
        prompt_length=3,  # response 24
        logprobs=[-0.4],
        advantages=[-1.0],
        reward=0.0,
        eid=EID(task=0, run=1),
    )
    return [multi_turn, short]


def test_full_sequence_tensors() -> None:
    batch = collate(_batch(), PAD)
    assert batch.input_ids.tolist() == [[11, 12, 13, 14, 15], [21, 22, 23, 24, PAD]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    assert batch.position_ids.tolist() == [[0, 1, 2, 3, 4], [0, 1, 2, 3, 0]]
    assert batch.prompt_lengths.tolist() == [2, 3]
    assert batch.response_lengths.tolist() == [3, 1]
    assert batch.rewards.tolist() == [1.0, 0.0]


def test_shifted_tensors_line_up_with_next_token_targets() -> None:
    batch = collate(_batch(), PAD)
    # column j ↔ target input_ids[:, j + 1]; response token k at column P + k − 1
    assert batch.input_ids[:, 1:].tolist() == [[12, 13, 14, 15], [22, 23, 24, PAD]]
    assert batch.response_mask.tolist() == [
        [False, True, True, True],
        [False, False, True, False],
    ]
    assert batch.loss_mask.tolist() == [[False, True, False, True], [False, False, True, False]]
    expected = torch.tensor([[0, -0.1, -0.2, -0.3], [0, 0, -0.4, 0]])
    assert torch.allclose(batch.old_logprobs, expected)
    assert batch.advantages.tolist() == [[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, -1.0, 0.0]]
    assert batch.returns is None and batch.token_level_rewards is None  # fields absent


def test_trainer_recipe_reproduces_rollout_logprobs() -> None:
    """A 'model' whose logits put exp(logprob) on the true next token gives ratio 1 exactly."""
    exps = _batch()
    batch = collate(exps, PAD)
    vocab = 32
    probs = torch.full((2, 5, vocab), 1.0 / vocab)
    for i, exp in enumerate(exps):
        for k, lp in enumerate(exp.logprobs.tolist()):
            pos = exp.prompt_length + k - 1  # the position whose logits predict token P + k
            target = int(exp.tokens[exp.prompt_length + k])
            probs[i, pos] = (1 - math.exp(lp)) / (vocab - 1)
            probs[i, pos, target] = math.exp(lp)
    logits = probs.log()
    logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, batch.input_ids[:, 1:, None])
    logp = logp.squeeze(-1)
    mask = batch.loss_mask
    assert torch.allclose(logp[mask], batch.old_logprobs[mask], atol=1e-6)
    loss, metrics = ppo_policy_loss(logp, batch.old_logprobs, batch.advantages, mask)
    assert metrics["policy/ratio_mean"] == pytest.approx(1.0)
    assert loss.item() == pytest.approx(-(1.0 + 1.0 - 1.0) / 3)  # tool token excluded


def test_optional_fields_and_errors() -> None:
    exps = _batch()
    exps[1].logprobs = None
    exps[1].reward = None
    batch = collate(exps, PAD)
    assert batch.old_logprobs is None and batch.rewards is None
    with pytest.raises(ValueError, match="at least one"):
        collate([], PAD)
    with pytest.raises(ValueError, match="no prompt token"):
        collate([Experience(tokens=[5, 6], prompt_length=0)], PAD)
