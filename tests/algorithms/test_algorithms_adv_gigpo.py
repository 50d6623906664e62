"""GiGPO: episode-level plus anchor-state step-level advantages, on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from reinforge.algorithms import ADVANTAGE_FNS, gigpo_advantage, resolve_algorithm
from reinforge.core import EID, Experience
from reinforge.core.state_hash import STATE_HASH, state_hash


def _step(task: int, run: int, step: int, reward: float | None, state: str | None) -> Experience:
    exp = Experience(
        tokens=[1, 2, 3, 4],
        prompt_length=2,
        action_mask=[1, 0],
        reward=reward,
        eid=EID(batch=0, task=task, run=run, step=step),
    )
    if state is not None:
        exp.info[STATE_HASH] = state
    return exp


def _three_runs() -> tuple[list[Experience], list[Experience], list[Experience]]:
    """Run A: S → X, succeeds (1). Run B: S → X → Y, fails (0). Run C: S, succeeds (1).

    Rewards sit on every step (as a reward-propagation workflow leaves them); run
    mode reads only each run's last one.
    """
    a = [_step(0, 0, 0, 1.0, "S"), _step(0, 0, 1, 1.0, "X")]
    b = [_step(0, 1, 0, 0.0, "S"), _step(0, 1, 1, 0.0, "X"), _step(0, 1, 2, 0.0, "Y")]
    c = [_step(0, 2, 0, 1.0, "S")]
    return a, b, c


def _adv(exp: Experience) -> float:
    assert exp.advantages[1].item() == 0.0  # the unmasked token carries nothing
    return exp.advantages[0].item()


def test_registered_with_a_preset() -> None:
    assert ADVANTAGE_FNS.get("gigpo") is gigpo_advantage
    spec = resolve_algorithm("gigpo")
    assert spec.advantage_fn == "gigpo"
    assert spec.advantage_args["gamma"] == 0.95
    assert spec.policy_loss_fn == "ppo"


def test_mean_only_example() -> None:
    a, b, c = _three_runs()
    metrics = gigpo_advantage(a + b + c, gamma=0.5, std_normalize=False)
    # returns G_t = gamma^(T-1-t) * R: A [0.5, 1], B [0, 0, 0], C [1]
    assert [e.returns[0].item() for e in a + b + c] == [0.5, 1.0, 0.0, 0.0, 0.0, 1.0]
    # episode level: R = 1, 0, 1 (mean 2/3) -> 1/3, -2/3, 1/3
    # step level: S {0.5, 0, 1} mean 0.5 -> 0, -0.5, 0.5; X {1, 0} -> 0.5, -0.5; Y alone -> 0
    expected = [1 / 3 + 0.0, 1 / 3 + 0.5, -2 / 3 - 0.5, -2 / 3 - 0.5, -2 / 3 + 0.0, 1 / 3 + 0.5]
    assert [_adv(e) for e in a + b + c] == pytest.approx(expected, abs=1e-6)
    assert metrics["anchor/group_count"] == 3.0
    assert metrics["anchor/singleton_fraction"] == pytest.approx(1 / 6)
    assert metrics["anchor/missing_fraction"] == 0.0
    assert metrics["run/count"] == 3.0


def test_std_normalised_example_and_weight() -> None:
    a, b, c = _three_runs()
    gigpo_advantage(a + b + c, gamma=0.5, step_advantage_weight=0.5, epsilon=0.0)
    # episode: R = [1, 0, 1], unbiased std sqrt(1/3) -> (1/3)/sqrt(1/3) = sqrt(1/3)
    ep = math.sqrt(1 / 3)
    # step: S {0.5, 0, 1}: std 0.5 -> 0, -1, 1; X {1, 0}: std sqrt(0.5) -> ±sqrt(0.5)
    x = math.sqrt(0.5)
    expected = [
        ep + 0.5 * 0.0,
        ep + 0.5 * x,
        -2 * ep + 0.5 * -1.0,
        -2 * ep + 0.5 * -x,
        -2 * ep,
        ep + 0.5 * 1.0,
    ]
    assert [_adv(e) for e in a + b + c] == pytest.approx(expected, rel=1e-5)


def test_no_shared_states_is_plain_multi_step_grpo() -> None:
    a, b, c = _three_runs()
    for i, exp in enumerate(a + b + c):
        exp.info[STATE_HASH] = f"unique-{i}"
    gigpo_advantage(a + b + c, std_normalize=False)
    assert [_adv(e) for e in a + b + c] == pytest.approx(
        [1 / 3, 1 / 3, -2 / 3, -2 / 3, -2 / 3, 1 / 3], abs=1e-6
    )


def test_a_state_revisited_in_one_run_joins_its_group() -> None:
    # run 0 loops S -> S and then succeeds; run 1 fails from S at once
    run0 = [_step(0, 0, 0, None, "S"), _step(0, 0, 1, 1.0, "S")]
    run1 = [_step(0, 1, 0, 0.0, "S")]
    gigpo_advantage(run0 + run1, gamma=0.5, std_normalize=False)
    # G: run0 [0.5, 1], run1 [0]; S group mean 0.5 -> [0, 0.5, -0.5]; episode ±0.5
    assert [_adv(e) for e in run0 + run1] == pytest.approx([0.5, 1.0, -1.0])


def test_steps_without_a_state_hash_get_no_step_credit() -> None:
    a, b, c = _three_runs()
    for exp in a + b + c:
        exp.info.pop(STATE_HASH)
    metrics = gigpo_advantage(a + b + c, gamma=0.5, std_normalize=False)
    assert metrics["anchor/missing_fraction"] == 1.0
    assert metrics["step_advantage/max"] == metrics["step_advantage/min"] == 0.0
    assert _adv(b[0]) == pytest.approx(-2 / 3)


def test_step_mode_uses_each_steps_reward() -> None:
    # run 0: rewards [0.2, 1.0]; run 1: [None -> 0, 0.5]; both start in S, then X / Z
    run0 = [_step(0, 0, 0, 0.2, "S"), _step(0, 0, 1, 1.0, "X")]
    run1 = [_step(0, 1, 0, None, "S"), _step(0, 1, 1, 0.5, "Z")]
    gigpo_advantage(run0 + run1, gamma=1.0, reward_mode="step", std_normalize=False)
    # R = 1.2, 0.5 -> ±0.35; S: G 1.2 vs 0.5 -> ±0.35; X, Z alone -> 0
    assert [_adv(e) for e in run0 + run1] == pytest.approx([0.7, 0.35, -0.7, -0.35])
    assert run0[0].returns[0].item() == pytest.approx(1.2)


def test_tasks_are_separate_groups() -> None:
    # the same state hash in two tasks never pools them
    exps = [_step(0, 0, 0, 1.0, "S"), _step(1, 0, 0, 0.0, "S")]
    gigpo_advantage(exps)
    assert [_adv(e) for e in exps] == [0.0, 0.0]


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="reward_mode"):
        gigpo_advantage([], reward_mode="episode")
    with pytest.raises(ValueError, match="gamma"):
        gigpo_advantage([], gamma=1.5)


def test_state_hash_ignores_whitespace_layout() -> None:
    assert state_hash("a  b\nc") == state_hash(" a b c ") != state_hash("a b d")
    assert len(state_hash("x")) == 16
    with pytest.raises(TypeError):
        state_hash(3)  # type: ignore[arg-type]
