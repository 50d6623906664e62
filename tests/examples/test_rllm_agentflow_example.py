"""``examples/rllm_agentflow``: an rLLM 0.3 AgentFlow and its evaluator, run from the shipped
configs: explored on the mock engine (episodes become token-exact, rewarded experiences)
and trained one GRPO step on the tiny model."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.models.tokenizer import ByteTokenizer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rllm_agentflow"
#: grpo.yaml's plugins (the flow, the evaluator) and the test-only sampled-token reward
PLUGINS = [
    EXAMPLE / "arith_flow.py",
    EXAMPLE / "arith_eval.py",
    Path(__file__).with_name("sampled_token_reward.py"),
]


def _stored(run_dir: Path) -> list:
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return storage.read()
    finally:
        storage.close()


def test_explore_mock_turns_each_rollout_into_two_rewarded_experiences(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "explore", "-c", str(EXAMPLE / "explore_mock.yaml"), "--run-dir", str(run_dir),
            "--set", "buffer.explorer_input.taskset.limit=4", "--set", "buffer.batch_size=4",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    exps = _stored(run_dir)
    assert len(exps) == 4 * 4 * 2  # tasks x repeat_times x the flow's two calls

    by_episode: dict[str, list] = {}
    for exp in exps:
        by_episode.setdefault(exp.info["episode_id"], []).append(exp)
    assert len(by_episode) == 16
    tokenizer = ByteTokenizer()
    rewards = set()
    for pair in by_episode.values():
        first, second = sorted(pair, key=lambda e: e.info["step_index"])
        assert [first.info["step_index"], second.info["step_index"]] == [0, 1]
        assert first.info["trajectory_name"] == second.info["trajectory_name"] == "solver"
        # one score for the episode, on both calls, and it is the evaluator's verdict
        assert first.reward == second.reward == first.metrics["accuracy"]
        assert first.metrics["boxed"] == 1.0
        rewards.add(first.reward)
        # the second call answered the whole conversation, the first reply included
        assert [m["role"] for m in second.messages] == [
            "system", "user", "assistant", "user", "assistant",
        ]  # fmt: skip
        assert second.messages[2]["content"] == first.response_text
        for exp in pair:  # token-exact: the ids are the ones sampled, the mask covers them
            response = exp.tokens[exp.prompt_length :].tolist()
            assert tokenizer.decode(response, skip_special_tokens=True) == exp.response_text
            assert exp.action_mask.all() and len(exp.logprobs) == len(response)
    assert rewards == {0.0, 1.0}  # the mock's error_rate makes some answers wrong


def test_grpo_config_trains_a_step_on_the_tiny_model(
    tmp_path: Path, tiny_model_path: Path, varying_reward: list[str], assert_run_trained
) -> None:
    run_dir = tmp_path / "run"
    overrides = [
        "model.model_path=tiny-random-smollm2",
        "model.max_response_tokens=6",
        "buffer.total_steps=1",
        "buffer.batch_size=2",
        "buffer.explorer_input.taskset.repeat_times=2",
        "buffer.explorer_input.taskset.rollout_args.max_tokens=6",
        "trainer.lr=1.0e-3",
        "trainer.micro_batch_size=4",
        "monitor.progress=false",
        "monitor.plot=false",
        "monitor.tensorboard=false",
        # the tiny model never answers right: score what it sampled, so groups differ;
        # ``--set plugins=[...]`` replaces the list, so the example's own plugins stay
        # named here (else the flow is found only if an earlier test imported it)
        *(item for item in varying_reward if not item.startswith("plugins=")),
        f"plugins=[{', '.join(str(p) for p in PLUGINS)}]",
    ]
    result = CliRunner().invoke(
        app,
        [
            "run", "-c", str(EXAMPLE / "grpo.yaml"), "--run-dir", str(run_dir),
            *(x for item in overrides for x in ("--set", item)),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    exps = _stored(run_dir)
    assert len(exps) == 2 * 2 * 2  # tasks x repeat_times x calls
    assert all(e.info["trajectory_name"] == "solver" for e in exps)
    assert_run_trained(run_dir, tiny_model_path, 1)
