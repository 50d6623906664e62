"""Episode workflows through reinforge: registration as workflows, the adapter, and
the explorer end to end (hangs, errors, masking, thread-unsafe envs), on the
guess-the-number game of ``episode_guess_game.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from episode_guess_game import (
    AttachingGuessWorkflow,
    GuessEnv,
    GuessWorkflow,
    RecordingEngine,
    guess_workflow,
    make_model,
    run_episode,
)

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.config import config_from_dict
from reinforge.core import Experience, FormatConfig, GenerationConfig, Task
from reinforge.explorer import Explorer
from reinforge.models import ModelWrapper
from reinforge.workflows import WORKFLOWS
from reinforge.workflows import Workflow as ReinforgeWorkflow
from reinforge.workflows.episode import (
    Episode,
    EpisodeWorkflow,
    EpisodeWorkflowAdapter,
    ModelWrapperEngine,
    TerminationReason,
    Workflow,
)

# ---- registration and the explorer -----------------------------------------------------------


def test_registering_an_episode_workflow_registers_its_adapter() -> None:
    adapter = WORKFLOWS.get("test_guess_number_episode")
    assert issubclass(adapter, EpisodeWorkflowAdapter) and issubclass(adapter, ReinforgeWorkflow)
    assert adapter.episode_workflow_cls is GuessWorkflow
    assert adapter.is_async and adapter.can_repeat
    assert WORKFLOWS.get("test_guess_number_episode") is adapter  # cached: one class
    assert WORKFLOWS.register_module("test_guess_number_episode")(GuessWorkflow) is GuessWorkflow
    assert (adapter.__module__, adapter.__qualname__) == (
        GuessWorkflow.__module__,
        GuessWorkflow.__qualname__,
    )
    assert WORKFLOWS.get("test_guess_attached_episode").episode_workflow_cls is (
        AttachingGuessWorkflow
    )
    assert Workflow is EpisodeWorkflow


def test_dotted_path_resolves_to_the_adapter(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_rllm_port.py").write_text(
        "from reinforge.workflows.episode import Workflow\n"
        "class Port(Workflow):\n"
        "    async def run(self, task, uid, **kwargs):\n"
        "        return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    adapter = WORKFLOWS.get("my_rllm_port.Port")
    assert issubclass(adapter, EpisodeWorkflowAdapter)
    task = Task(workflow="my_rllm_port.Port", task_id=1)
    assert task.workflow_cls is adapter
    # a Task holding the adapter class serialises to a path that resolves to it again
    assert Task.from_dict(Task(workflow=adapter).to_dict()).workflow_cls is adapter


def make_task(workflow: str, target: int = 3, **workflow_args: Any) -> Task:
    return Task(
        workflow=workflow,
        repeat_times=3,
        format_args=FormatConfig(prompt_key="question", response_key="target"),
        rollout_args=GenerationConfig(temperature=0.7, seed=11),
        workflow_args=workflow_args,
        raw_task={"question": "guess", "target": target},
        task_id=5,
    )


def test_adapter_runs_every_rollout_and_converts() -> None:
    model = make_model()
    wf = make_task("test_guess_number_episode", max_turns=4).to_workflow(model)
    wf.set_repeat_times(3, run_id_base=6)
    exps = asyncio.run(wf.run_async())
    assert len(wf.episodes) == 3 and all(e.is_correct for e in wf.episodes)
    assert sorted({e.eid.run for e in exps}) == [6, 7, 8]
    assert len(exps) == 9 and all(e.reward == 1.0 for e in exps)
    assert [ep.id for ep in wf.episodes] == ["5:6", "5:7", "5:8"]
    # rollout i samples with seed + i, and the task row reached run() as a copy
    engines = [wf.make_engine(r) for r in (6, 7)]
    assert [e.sampling["seed"] for e in engines] == [17, 18]
    assert engines[0].sampling["temperature"] == 0.7
    assert wf.episodes[0].task == {"question": "guess", "target": 3}


def test_adapter_reads_conversion_and_engine_options() -> None:
    task = make_task(
        "test_guess_number_episode",
        target=9,
        max_turns=2,
        conversion={"reward": "step", "mask_termination_reasons": ["max_turns_exceeded"]},
        rollout_engine_args={"max_prompt_length": 4096},
    )
    wf = task.to_workflow(make_model())
    assert wf.workflow_kwargs == {"max_turns": 2}
    assert wf.make_engine(0).max_prompt_length == 4096
    exps = asyncio.run(wf.run_async())  # all rollouts ran out of turns: masked
    assert exps and all(e.mask_reason.startswith("max_turns_exceeded: ") for e in exps)
    assert {ep.termination_reason for ep in wf.episodes} == {TerminationReason.MAX_TURNS_EXCEEDED}


def write_taskset(path, targets: list[int]) -> None:
    with open(path, "w") as fh:
        for target in targets:
            fh.write(json.dumps({"question": "Guess my number", "target": target}) + "\n")


def explore(tmp_path, workflow: str, targets: list[int], **workflow_args: Any):
    write_taskset(tmp_path / "tasks.jsonl", targets)
    cfg = config_from_dict(
        {
            "run_dir": str(tmp_path / "run"),
            "model": {"engine": "mock"},
            "buffer": {
                "batch_size": 4,
                "explorer_input": {
                    "taskset": {
                        "name": "guess",
                        "path": "tasks.jsonl",
                        "format": {"prompt_key": "question", "response_key": "target"},
                        "repeat_times": 2,
                        "default_workflow_type": workflow,
                        "workflow_args": workflow_args,
                    }
                },
            },
            "explorer": {"runner_concurrency": 2, "max_timeout": 30},
        },
        config_dir=str(tmp_path),
    )
    engine = RecordingEngine()
    explorer = Explorer(
        engine,
        buffer=cfg.buffer,
        explorer=cfg.explorer,
        storage=SQLiteExperienceStorage(cfg.storage_path),
        config_dir=cfg.config_dir,
    )
    try:
        summary = asyncio.run(explorer.explore())
    finally:
        explorer.close()
    return summary, SQLiteExperienceStorage(cfg.storage_path), engine


def test_explorer_runs_episode_workflows_end_to_end(tmp_path) -> None:
    summary, storage, engine = explore(
        tmp_path, "test_guess_number_episode", [2, 3, 9], max_turns=4
    )
    assert summary.status_counts == {"ok": 3}
    exps = storage.read()
    # targets 2 and 3 are found (2 and 3 steps), 9 runs out of turns (4 steps); 2 rollouts each
    assert len(exps) == summary.experiences == 2 * (2 + 3 + 4)
    by_task = Experience.group_by(exps, "task")
    assert len(by_task) == 3
    runs = Experience.group_by(exps, "run")
    assert len(runs) == 6
    for run in runs.values():
        assert [e.eid.step for e in sorted(run, key=lambda e: e.eid.step)] == list(range(len(run)))
    reasons = {(e.eid.task, e.info["termination_reason"], e.reward) for e in exps}
    assert reasons == {(0, "env_done", 1.0), (1, "env_done", 1.0), (2, "max_turns_exceeded", 0.0)}
    assert summary.metrics["explore/accuracy"] == pytest.approx((4 + 6) / 18)
    # token-exact: each stored experience is one sampled completion after its prompt
    sampled = {tuple(p + c) for p, c, _ in engine.sampled}
    assert {tuple(e.tokens.tolist()) for e in exps} <= sampled
    assert all(e.info["taskset"] == "guess" for e in exps)


def test_explorer_finishes_when_episodes_hang(tmp_path) -> None:
    summary, storage, _ = explore(tmp_path, "test_hanging_episode", [5, 6], timeout=0.2)
    assert summary.status_counts == {"ok": 2}
    exps = storage.read()
    # run 1 of each task hangs → TIMEOUT → masked (dropped); run 0 ends normally
    assert sorted((e.eid.task, e.eid.run) for e in exps) == [(0, 0), (1, 0)]
    assert {e.info["termination_reason"] for e in exps} == {"env_done"}


def test_explorer_keeps_errored_episodes_when_not_masked(tmp_path) -> None:
    summary, storage, _ = explore(
        tmp_path,
        "test_guess_number_episode",
        [9],
        explode_on_turn=2,
        conversion={"mask_termination_reasons": []},
    )
    assert summary.status_counts == {"ok": 1}
    exps = storage.read()
    assert len(exps) == 4  # two rollouts, two steps each
    for exp in exps:
        assert exp.info["termination_reason"] == "error" and exp.reward == 0.0
        assert "the number machine broke on turn 2" in exp.info["error"]["traceback"]


@pytest.mark.parametrize(
    ("workflow", "workflow_args", "reason"),
    [
        ("test_always_hanging_episode", {"timeout": 0.2}, "timeout"),
        ("test_hanging_before_any_call_episode", {"timeout": 0.2}, "timeout"),
        ("test_guess_number_episode", {"explode_on_turn": 1}, "error"),
    ],
)
def test_a_task_whose_every_episode_is_masked_is_ok_and_not_retried(
    tmp_path, workflow, workflow_args, reason
) -> None:
    # every rollout times out (or its env crashes): an outcome, masked by default - not
    # a failed task ("returned no experience") that the explorer retries
    summary, storage, _ = explore(tmp_path, workflow, [5], **workflow_args)
    assert summary.status_counts == {"ok": 1}
    assert summary.metrics["explore/failed_tasks"] == 0.0
    assert storage.read() == []  # nothing to train on
    (record,) = storage.task_results()
    assert record.status == "masked" and record.attempts == 1
    assert record.num_experiences == 0
    assert f"{reason}: episode 0:0" in record.error and f"{reason}: episode 0:1" in record.error


def test_masked_episodes_reach_the_explorer_as_masked_outcomes() -> None:
    wf = make_task("test_always_hanging_episode", timeout=0.05).to_workflow(make_model())
    exps = asyncio.run(wf.run_async())
    assert [(e.eid.run, e.eid.step) for e in exps] == [(0, 0), (1, 0), (2, 0)]
    for exp in exps:
        assert exp.mask_reason.startswith(f"timeout: episode 5:{exp.eid.run}")
        assert exp.info["termination_reason"] == "timeout" and exp.info["masked"] is True
        assert exp.reward is None and exp.response_length > 0  # the step that was sampled
    # an episode with no sampled step is still recorded, as one empty masked experience
    wf = make_task("test_hanging_before_any_call_episode", timeout=0.05).to_workflow(make_model())
    exps = asyncio.run(wf.run_async())
    assert len(exps) == 3 and all(e.response_length == 0 and e.reward is None for e in exps)
    assert all(e.mask_reason.startswith("timeout: ") for e in exps)
    assert {e.info["termination_reason"] for e in exps} == {"timeout"}
    # invalid_reward: the steps go on to the pipeline as documented (reward None, not
    # masked here); only an episode without steps needs the masked placeholder
    wf = make_task(
        "test_always_hanging_episode", timeout=0.05, conversion={"masked": "invalid_reward"}
    ).to_workflow(make_model())
    exps = asyncio.run(wf.run_async())
    assert len(exps) == 3
    assert all(e.mask_reason is None and e.reward is None and e.info["masked"] for e in exps)


def test_thread_unsafe_envs_take_turns_in_the_executor() -> None:
    import threading
    import time

    state = {"inside": 0, "most": 0}
    lock = threading.Lock()

    class Unsafe(GuessEnv):
        @staticmethod
        def is_multithread_safe() -> bool:
            return False

        def step(self, action, pause=0.0):
            with lock:
                state["inside"] += 1
                state["most"] = max(state["most"], state["inside"])
            time.sleep(pause)
            with lock:
                state["inside"] -= 1
            return "x", 0.0, True, {}

    async def both() -> None:
        workflows = [guess_workflow() for _ in range(3)]
        for wf in workflows:
            wf.env = Unsafe()
        await asyncio.gather(
            *(wf.run_in_executor(wf.env.step, "1", pause=0.05) for wf in workflows)
        )

    asyncio.run(both())
    assert state["most"] == 1


class EngineWithCallsCounter(ModelWrapperEngine):
    """A user's rollout engine that keeps its own ``calls`` counter (an int)."""

    def __init__(self, model: ModelWrapper) -> None:
        super().__init__(model)
        self.calls = 0

    async def get_model_response(self, messages, **kwargs):
        self.calls += 1
        return await super().get_model_response(messages, **kwargs)


def test_a_user_attribute_named_calls_does_not_break_the_episode() -> None:
    engine = EngineWithCallsCounter(make_model())
    episode = run_episode(GuessWorkflow(rollout_engine=engine, max_turns=3), {"target": 2})
    assert episode.termination_reason != TerminationReason.ERROR, episode.info.get("error")
    assert engine.calls >= 1 and episode.trajectories


class BrokenPostprocess(GuessWorkflow):
    def collect_metrics(self, episode: Episode) -> None:
        raise KeyError("metric bookkeeping broke")


def test_any_exception_inside_ends_as_an_error_episode() -> None:
    wf = BrokenPostprocess(rollout_engine=ModelWrapperEngine(make_model()), max_turns=2)
    episode = run_episode(wf, {"target": 1}, uid="7:0")
    assert episode.termination_reason == TerminationReason.ERROR and episode.id == "7:0"
    assert "metric bookkeeping broke" in episode.info["error"]["error_message"]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


class RaisesUnprintable(GuessWorkflow):
    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        raise Unprintable()


def test_an_exception_that_cannot_be_printed_still_ends_as_error() -> None:
    wf = RaisesUnprintable(rollout_engine=ModelWrapperEngine(make_model()))
    episode = run_episode(wf, {"target": 1})
    assert episode.termination_reason == TerminationReason.ERROR
    assert episode.info["error"]["error_type"] == "Unprintable"
    assert "Unprintable" in episode.info["error"]["traceback"]
