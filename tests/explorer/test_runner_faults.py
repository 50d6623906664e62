"""A workflow that raises, hangs, or returns garbage ends as a recorded failure, never a crash."""

import asyncio
import threading
import time

from reinforge import REWARD_FUNCTIONS, WORKFLOWS, RewardFn, Task, Workflow
from reinforge.core import Experience
from reinforge.explorer import Scheduler, WorkflowRunner, make_requests
from reinforge.explorer.messages import FAILED, OK, TIMEOUT
from reinforge.models import MockEngine

CALLS: dict[str, int] = {}
RELEASE = threading.Event()


@WORKFLOWS.register_module("test_raises")
class Raises(Workflow):
    def run(self):
        raise RuntimeError(f"boom on {self.task.raw_task['q']}")


@WORKFLOWS.register_module("test_flaky")
class Flaky(Workflow):
    def run(self):
        key = self.task.raw_task["q"]
        CALLS[key] = CALLS.get(key, 0) + 1
        if CALLS[key] == 1:
            raise ConnectionError("transient")
        return [Experience(tokens=[1, 2, 3], prompt_length=2, reward=1.0)]


@WORKFLOWS.register_module("test_hangs")
class Hangs(Workflow):
    def run(self):
        RELEASE.wait(60)  # a blocking call that never returns in time
        return []


@WORKFLOWS.register_module("test_async_hangs")
class AsyncHangs(Workflow):
    is_async = True

    async def run_async(self):
        await asyncio.sleep(60)
        return []


@WORKFLOWS.register_module("test_garbage")
class Garbage(Workflow):
    def run(self):
        return "not a list of experiences"


@WORKFLOWS.register_module("test_ok")
class Ok(Workflow):
    def run(self):
        return [Experience(tokens=[1, 2, 3, 4], prompt_length=2, reward=0.5)]


@REWARD_FUNCTIONS.register_module("test_hanging_reward")
class HangingReward(RewardFn):
    def __call__(self, response, truth=None, prompt=None, **kwargs):
        RELEASE.wait(60)
        return {"accuracy": 1.0}


def _run(tasks, timeout=5.0, retries=0, concurrency=2):
    engine = MockEngine(policy="arithmetic")
    runners = [WorkflowRunner(engine, runner_id=i) for i in range(concurrency)]
    requests = make_requests(tasks, taskset="faults", timeout=timeout, max_retries=retries)
    scheduler = Scheduler(runners)
    try:
        return asyncio.run(scheduler.run(requests))
    finally:
        scheduler.close()


def _task(workflow, task_id, **kw):
    return Task(workflow=workflow, raw_task={"q": f"q{task_id}", "a": "1"}, task_id=task_id, **kw)


def test_raising_workflow_is_recorded_with_message_and_others_continue():
    results = _run([_task("test_raises", 0), _task("test_ok", 1)])
    assert [r.status for r in results] == [FAILED, OK]
    assert "task 0 of taskset 'faults' failed: RuntimeError: boom on q0" in results[0].error
    assert "test_runner_faults.py" in results[0].error  # where it was raised
    assert len(results[1].experiences) == 1


def test_retry_recovers_from_transient_error():
    results = _run([_task("test_flaky", 5)], retries=1)
    assert results[0].status == OK and results[0].attempts == 2


def test_retries_are_bounded():
    results = _run([_task("test_raises", 0)], retries=2)
    assert results[0].status == FAILED and results[0].attempts == 3


def test_hanging_sync_workflow_times_out_and_runner_keeps_working():
    start = time.monotonic()
    results = _run(
        [_task("test_hangs", 0), _task("test_ok", 1), _task("test_ok", 2)],
        timeout=0.5,
        concurrency=1,
    )
    assert time.monotonic() - start < 10
    assert [r.status for r in results] == [TIMEOUT, OK, OK]
    assert "timed out after 0.5s" in results[0].error


def test_hanging_async_workflow_times_out():
    results = _run([_task("test_async_hangs", 0)], timeout=0.3)
    assert results[0].status == TIMEOUT


def test_hanging_reward_fn_times_out_the_task():
    tasks = [
        Task(
            workflow="simple_workflow",
            reward_fn="test_hanging_reward",
            raw_task={"prompt": "1 + 1", "response": "2"},
            task_id=0,
        ),
        _task("test_ok", 1),
    ]
    results = _run(tasks, timeout=0.5)
    assert [r.status for r in results] == [TIMEOUT, OK]


def test_wrong_return_type_is_a_clear_failure():
    results = _run([_task("test_garbage", 0)])
    assert results[0].status == FAILED
    assert "returned str; expected list[Experience]" in results[0].error


def test_unknown_workflow_name_is_reported_per_task():
    engine = MockEngine()
    runner = WorkflowRunner(engine)
    from reinforge.explorer.messages import TaskRequest

    req = TaskRequest(
        task=_task("no_such_workflow", 0),
        repeat_times=1,
        run_id_base=0,
        timeout=5,
        max_retries=0,
    )
    result = asyncio.run(runner.run(req))
    assert result.status == FAILED and "unknown workflow 'no_such_workflow'" in result.error


def test_non_repeatable_workflow_runs_once_per_repeat():
    results = _run([_task("test_ok", 4, repeat_times=3)])
    assert len(results) == 3
    assert sorted(r.experiences[0].eid.run for r in results) == [0, 1, 2]
    assert all(r.experiences[0].eid.task == 4 for r in results)


def teardown_module():
    RELEASE.set()  # let abandoned threads finish


LATE = threading.Event()


@WORKFLOWS.register_module("test_hangs_then_calls_the_model")
class HangsThenCallsTheModel(Workflow):
    def run(self):
        LATE.wait(10)  # outlives its timeout, then uses the model it was given
        self.model.chat([{"role": "user", "content": "late"}])
        return []


@WORKFLOWS.register_module("test_counts_leftover_history")
class CountsLeftoverHistory(Workflow):
    def run(self):
        LATE.set()
        time.sleep(0.3)  # the abandoned workflow makes its call now
        leftovers = self.model.extract_experience_from_history()
        return [Experience(tokens=[1, 2, 3], prompt_length=2, reward=float(len(leftovers)))]


def test_abandoned_workflow_cannot_write_into_the_next_tasks_history():
    engine = MockEngine(policy="arithmetic")
    runner = WorkflowRunner(engine, enable_history=True)
    tasks = [_task("test_hangs_then_calls_the_model", 0), _task("test_counts_leftover_history", 1)]
    scheduler = Scheduler([runner])
    try:
        results = asyncio.run(
            scheduler.run(make_requests(tasks, taskset="faults", timeout=2.0, max_retries=0))
        )
    finally:
        scheduler.close()
    assert [r.status for r in results] == [TIMEOUT, OK]
    assert results[1].experiences[0].reward == 0.0


MUTATIONS: list[tuple[int, str | None, dict]] = []


@WORKFLOWS.register_module("test_mutates_its_task")
class MutatesItsTask(Workflow):
    """Changes its task's settings, then fails its first attempt."""

    def run(self):
        task = self.task
        MUTATIONS.append((task.rollout_args.n, task.workflow_args.get("seen"), dict(task.index)))
        task.workflow_args["seen"] = "yes"
        task.index["row"] = -1
        task.rollout_args.n = 99
        task.rollout_args.stop.append("<changed>")
        if len(MUTATIONS) == 1:
            raise ConnectionError("transient")
        return [Experience(tokens=[1, 2, 3], prompt_length=2, reward=1.0)]


def test_each_attempt_runs_on_its_own_copy_of_the_task():
    MUTATIONS.clear()
    task = Task(
        workflow="test_mutates_its_task",
        repeat_times=2,
        raw_task={"question": "1 + 1?"},
        workflow_args={"max_turns": 3},
        index={"row": 7},
        task_id=7,
    )
    requests = make_requests([task], taskset="t", timeout=10, max_retries=1)
    assert all(r.task is task for r in requests)  # in this process the Task itself travels
    results = _run([task], timeout=10, retries=1, concurrency=1)
    assert [r.status for r in results] == ["ok", "ok"]
    assert [r.attempts for r in results] == [2, 1]  # the first attempt failed and was retried
    # every attempt (the retry too) saw the task as it was built, whatever the last one changed
    assert MUTATIONS == [(1, None, {"row": 7})] * 3
    assert task.workflow_args == {"max_turns": 3} and task.index == {"row": 7}
    assert task.rollout_args.n == 2 and task.rollout_args.stop == []
