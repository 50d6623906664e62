"""``black_box_agent_workflow``: train an agent that only speaks the OpenAI API, as a program.

The agent is a command (any language, any framework: LangGraph, CrewAI, a script on
the plain ``openai`` SDK). For each rollout the workflow opens a recording endpoint
on its model (``model.agent_endpoint``) and starts the command with

* ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OPENAI_MODEL`` in its environment
  (``openai.OpenAI()`` reads the first two by itself), the key naming this task and run;
* the task's row as one JSON object on its standard input.

Every call the agent makes with that key is recorded token-exact by the rollout
model's history; what the agent prints on standard output is its answer, scored by
the taskset's reward function against the task's truth, and that reward goes on every
recorded experience (``shape: conversation``, the default, merges a multi-turn
conversation into one experience, as in-process agents get). A command that exits
non-zero, makes no model call, or runs past ``timeout`` seconds fails the task with
the reason (its stderr's end); the process is killed when the task is cancelled.

``workflow_args``: ``command`` (a list, or a string split like a shell does; ``{python}``
stands for the interpreter running reinforge), ``cwd``, ``timeout`` (s, default 600),
``shape`` (``conversation`` or ``turn``). A subclass may set ``command`` instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
from typing import Any, ClassVar

from reinforge.core import Experience, Task
from reinforge.rewards.reward_fn import call_reward_fn
from reinforge.workflows.simple import BaseSimpleWorkflow
from reinforge.workflows.step_wise import require_history
from reinforge.workflows.workflow import WORKFLOWS

STDERR_TAIL = 2000


def agent_command(command: list[str] | str | None, task: Task) -> list[str]:
    """The command as an argument list, ``{python}`` replaced; an error naming the task
    when there is none."""
    if not command:
        raise ValueError(
            f"task {task.task_id!r}: black_box_agent_workflow needs the agent's command: "
            "set workflow_args.command (a list, or a string) in the taskset config"
        )
    parts = shlex.split(command) if isinstance(command, str) else [str(p) for p in command]
    return [p.replace("{python}", sys.executable) for p in parts]


@WORKFLOWS.register_module("black_box_agent_workflow")
class BlackBoxAgentWorkflow(BaseSimpleWorkflow):
    """One rollout = one run of the agent's command against a recording endpoint."""

    is_async = True
    can_reset = True
    can_repeat = False  # one agent run per rollout: the explorer runs it repeat_times times
    #: the agent's command, for subclasses that fix it (``workflow_args.command`` wins)
    command: ClassVar[list[str] | str | None] = None

    def __init__(self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None):
        require_history(model, type(self).__name__)
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)

    def reset(self, task: Task) -> None:
        super().reset(task)
        args = task.workflow_args or {}
        self.argv = agent_command(args.get("command", self.command), task)
        self.cwd = args.get("cwd")
        self.timeout = float(args.get("timeout", 600))
        self.shape = args.get("shape", "conversation")

    async def run_async(self) -> list[Experience]:
        self.model.extract_experience_from_history()  # start from a clean history
        label = f"task-{self.task.task_id}-run-{self.run_id_base}"
        with self.model.agent_endpoint(label) as endpoint:
            answer = await self._run_agent(endpoint.env())
        experiences = self.model.extract_experience_from_history(shape=self.shape)
        if not experiences:
            raise RuntimeError(
                f"task {self.task.task_id!r}: the agent {self.argv} made no model call "
                "through the endpoint it was given (OPENAI_BASE_URL / OPENAI_API_KEY)"
            )
        components = call_reward_fn(
            self.reward_fn,
            response=answer,
            truth=self.truth,
            optional={"prompt": self.task_desc, "raw_task": self.raw_task},
        )
        reward = float(sum(components.values()))
        for exp in experiences:
            exp.reward = reward
            exp.metrics.update({k: float(v) for k, v in components.items()})
            exp.metrics["agent_calls"] = float(len(experiences))
            exp.eid.run = self.run_id_base
            exp.info["agent_answer"] = answer
        return experiences

    async def _run_agent(self, endpoint_env: dict[str, str]) -> str:
        proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.cwd,
            env={**os.environ, **endpoint_env},
        )
        row = json.dumps(self.raw_task, ensure_ascii=False, default=str).encode()
        try:
            out, err = await asyncio.wait_for(proc.communicate(row), self.timeout)
        except TimeoutError:
            # not a TimeoutError: the runner would report its own per-task limit instead
            raise RuntimeError(
                f"task {self.task.task_id!r}: the agent {self.argv} ran past {self.timeout:g} s"
            ) from None
        finally:
            if proc.returncode is None:  # timed out or cancelled: the agent goes too
                proc.kill()
                await proc.wait()
        if proc.returncode != 0:
            tail = err.decode(errors="replace")[-STDERR_TAIL:]
            raise RuntimeError(
                f"task {self.task.task_id!r}: the agent {self.argv} exited {proc.returncode}: {tail}"
            )
        return out.decode(errors="replace").strip()
