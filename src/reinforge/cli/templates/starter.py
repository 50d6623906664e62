"""The starter project of ``reinforge init NAME``: a workflow, a config and a data set.

The texts are ``string.Template`` templates (``$name`` placeholders), kept here as
Python strings so that they ship inside the package with no package-data setup.
The data set is generated: small arithmetic questions with exact answers, which the
``mock`` engine's ``arithmetic`` policy answers (sometimes wrongly) and which the
embedded SmolLM2-135M-Instruct can learn.
"""

from __future__ import annotations

import json
import random
from string import Template

WORKFLOW = Template('''\
"""The $project workflow: ask an arithmetic question and score the reply.

reinforge imports this file before a run because config.yaml lists it under
`plugins:`; the decorator registers the class as "$workflow", the name the
tasksets in config.yaml use. Edit run() to make it your own agent: call
self.model.chat() as often as you like, then set each experience's reward.
"""

from __future__ import annotations

import re

from reinforge import WORKFLOWS, Experience, Workflow

INSTRUCTION = "Answer with just the number."
BOXED = re.compile(r"\\\\boxed\\{\\s*(-?\\d+)\\s*\\}")
NUMBER = re.compile(r"-?\\d+")


def final_answer(reply: str) -> str | None:
    """The number a reply ends on: its last boxed number, else its last number."""
    found = BOXED.findall(reply) or NUMBER.findall(reply)
    return found[-1] if found else None


@WORKFLOWS.register_module("$workflow")
class ArithmeticWorkflow(Workflow):
    """One question, repeat_times sampled replies; reward 1 for the right number."""

    can_repeat = True  # one run() call samples all repeat_times replies of the task

    def run(self) -> list[Experience]:
        row = self.task.raw_task
        messages = [{"role": "user", "content": f"{row['question']} {INSTRUCTION}"}]
        replies = self.model.chat(
            messages,
            n=self.repeat_times,
            temperature=self.task.rollout_args.temperature,
        )
        for i, exp in enumerate(replies):
            correct = final_answer(exp.response_text) == str(row["answer"])
            exp.metrics["accuracy"] = float(correct)  # what eval's mean@n averages
            exp.reward = float(correct)
            exp.eid.run = self.run_id_base + i  # tells the replies of one task apart
        return replies
''')

CONFIG = Template("""\
# $project: a starter reinforge project (written by `reinforge init`).
# From the folder that holds $folder/:
#   reinforge explore -c $folder/config.yaml   # sample the training tasks, store experiences
#   reinforge eval -c $folder/config.yaml      # mean@4 on the test split
#   reinforge config -c $folder/config.yaml    # this config with every default filled in
# Training needs a model with weights: switch model to the embedded SmolLM2-135M
# below, then
#   reinforge run -c $folder/config.yaml       # GRPO; the same command resumes it
project: $project_yaml
name: starter
mode: both
plugins: [workflow.py]            # imported before the run; registers "$workflow"
model:
  # the deterministic mock engine: no weights, instant; it answers arithmetic
  # and is off by one a quarter of the time, so rewards differ
  engine: mock
  mock: {policy: arithmetic, error_rate: 0.25}
  # the real model, embedded in reinforge (nothing is downloaded): delete the two
  # lines above and uncomment these two to explore, evaluate and train for real
  # engine: hf
  # model_path: smollm2-135m-instruct
  max_response_tokens: 32
buffer:
  batch_size: 8                   # tasks per step
  total_epochs: 1
  explorer_input:
    taskset:
      name: train
      path: data/train.jsonl      # relative to this file
      format: {prompt_key: question, response_key: answer}
      rollout_args: {temperature: 1.0}
      repeat_times: 4             # replies per task: one GRPO group
      default_workflow_type: $workflow
    eval_tasksets:
      - name: test
        path: data/test.jsonl
        format: {prompt_key: question, response_key: answer}
        rollout_args: {temperature: 1.0}
        repeat_times: 4
        default_workflow_type: $workflow
  experience_pipeline:
    operators:
      - name: reward_std_filter   # a group whose rewards are all equal teaches GRPO nothing
trainer:
  algorithm: grpo
  lr: 1.0e-5
  micro_batch_size: 8
explorer:
  runner_concurrency: 8
  eval_interval: 3                # evaluate every 3 steps (and at the end of `run`)
checkpoint:
  max_checkpoints_to_keep: 1
""")

README = Template("""\
# $project

A starter reinforge project, written by `reinforge init`.

| file | what it is |
| --- | --- |
| `workflow.py` | the workflow: asks a question with `self.model.chat()` and scores the replies |
| `config.yaml` | the run: mock engine by default, the embedded SmolLM2-135M one edit away |
| `data/train.jsonl`, `data/test.jsonl` | $n_train and $n_test arithmetic questions with answers |

From the folder that holds `$folder/`:

```bash
reinforge explore -c $folder/config.yaml    # sample and store experiences (mock engine: a few seconds)
reinforge eval -c $folder/config.yaml       # held-out mean@4
reinforge run -c $folder/config.yaml        # train (after switching model to engine: hf)
```

Runs are written to `runs/$project/starter/` under the current directory.
""")


def arithmetic_rows(count: int, seed: int) -> list[dict[str, str]]:
    """``count`` questions ``What is a op b?`` with their exact integer answers."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        op = rng.choice("+-*")
        a, b = rng.randint(2, 20), rng.randint(2, 12 if op == "*" else 20)
        answer = a + b if op == "+" else a - b if op == "-" else a * b
        rows.append({"question": f"What is {a} {op} {b}?", "answer": str(answer)})
    return rows


def jsonl(rows: list[dict[str, str]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)
