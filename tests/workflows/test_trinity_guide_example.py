"""The full example of Trinity-RFT's workflow guide runs unchanged but for its imports."""

from typing import List

from reinforge import WORKFLOWS, Experience, ModelWrapper, Task, Workflow
from reinforge.core import FormatConfig, GenerationConfig
from reinforge.models import MockEngine


@WORKFLOWS.register_module("example_workflow")
class ExampleWorkflow(Workflow):
    def __init__(self, task: Task, model: ModelWrapper, auxiliary_models: List):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.question = task.raw_task.get("question")
        self.answer = task.raw_task.get("answer")
        self.rollout_args = task.rollout_args

    def calculate_reward(self, response: str, truth: str) -> float:
        if response == truth:
            return 1.0
        else:
            return 0.0

    def run(self) -> List[Experience]:
        responses = self.model.chat(
            [
                {
                    "role": "user",
                    "content": f"Question:\n{self.question}",
                }
            ],
            n=self.rollout_args.n,
            temperature=self.rollout_args.temperature,
        )
        experiences = []
        for response in responses:
            reward: float = self.calculate_reward(response.response_text, self.answer)
            experiences.append(
                Experience(
                    tokens=response.tokens,
                    prompt_length=response.prompt_length,
                    reward=reward,
                    logprobs=response.logprobs,
                )
            )
        return experiences

    def resettable(self):
        return True

    def reset(self, task: Task):
        self.question = task.raw_task.get("question")
        self.answer = task.raw_task.get("answer")


def _task(question: str, answer: str, n: int = 3) -> Task:
    return Task(
        workflow="example_workflow",
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(n=n, temperature=1.0),
        raw_task={"question": question, "answer": answer},
        task_id=7,
    )


def test_guide_example_runs_and_scores():
    model = ModelWrapper(MockEngine(replies={r"1\+1": "2"}, default_reply="no idea"))
    right = _task("1+1=", "2").to_workflow(model).run()
    assert len(right) == 3
    assert all(e.reward == 1.0 for e in right)
    assert all(e.response_length > 0 and len(e.logprobs) == e.response_length for e in right)
    wrong = _task("2+2=", "4").to_workflow(model).run()
    assert [e.reward for e in wrong] == [0.0, 0.0, 0.0]


def test_guide_example_runs_through_the_explorer(tmp_path):
    import asyncio

    from reinforge.buffer import SQLiteExperienceStorage
    from reinforge.explorer import Scheduler, WorkflowRunner, make_requests

    engine = MockEngine(replies={r"1\+1": "2"})
    runner = WorkflowRunner(engine)
    tasks = [_task("1+1=", "2", n=1)]
    tasks[0].repeat_times = 4  # not can_repeat: the explorer runs it four times
    requests = make_requests(tasks, taskset="guide", timeout=10, max_retries=0)
    assert len(requests) == 4
    results = asyncio.run(Scheduler([runner]).run(requests))
    exps = [e for r in results for e in r.experiences]
    assert sorted(e.eid.run for e in exps) == [0, 1, 2, 3]
    assert {e.eid.tid for e in exps} == {"/7"}
    storage = SQLiteExperienceStorage(tmp_path / "b.db")
    storage.write(exps)
    assert storage.count() == 4
