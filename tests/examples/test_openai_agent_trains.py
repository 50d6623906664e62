"""An agent that uses only the OpenAI SDK trains with ``reinforge run`` (tiny model, 2 steps).

The example's agent (examples/openai_agent/agent.py) is loaded through the config's
``plugins``. The tiny random model never writes the right number, so a second
plugin subclasses the agent with one change: the reward is the parity of the final
reply's length. Rewards then differ within a group and GRPO must move the weights.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_agent"

PLUGIN = f"""
from pathlib import Path
from reinforge.launcher.plugins import load_plugin_file
from reinforge.workflows import WORKFLOWS

agent = load_plugin_file(Path({str(EXAMPLE / "agent.py")!r}))


@WORKFLOWS.register_module("test_parity_agent", force=True)
class ParityAgent(agent.SelfCheckArithmeticAgent):
    def reward(self, final_reply: str) -> float:
        return float(len(final_reply) % 2 == 0)
"""

CONFIG = """
project: oa
name: t
plugins: [parity_agent.py]
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 6
  hf: {batch_window_ms: 2}
buffer:
  batch_size: 2
  total_steps: 2
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      rollout_args: {max_tokens: 6}
      repeat_times: 4
      default_workflow_type: test_parity_agent
trainer:
  algorithm: grpo
  lr: 1.0e-3
  micro_batch_size: 4
explorer:
  runner_concurrency: 4
  eval_on_start: false
  rollout_model: {enable_history: true}
monitor: {progress: false, tensorboard: false, plot: false}
"""


def test_openai_sdk_agent_trains(tmp_path: Path, tiny_model_path: Path) -> None:
    (tmp_path / "parity_agent.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for q, a in [("1 + 1 =", 2), ("2 + 3 =", 5), ("4 + 4 =", 8), ("3 + 6 =", 9)]:
            fh.write(json.dumps({"question": q, "answer": a}) + "\n")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])

    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        exps = storage.read()
    finally:
        storage.close()
    assert len(exps) == 2 * 2 * 4  # steps x tasks x repeats: one experience per conversation
    for exp in exps:
        assert exp.info["turns"] == 2
        mask = "".join(str(int(m)) for m in exp.action_mask.tolist())
        assert re.fullmatch(r"1+0+1+", mask), mask  # reply, masked check message, reply
        glue = exp.tokens[exp.prompt_length :][~exp.action_mask]
        assert "Check your answer" in _decode(tiny_model_path, glue.tolist())
    assert {e.reward for e in exps} == {0.0, 1.0}

    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "train/loss" in r] == [1, 2]
    before = load_file(str(next(tiny_model_path.glob("*.safetensors"))))
    after: dict[str, torch.Tensor] = {}
    for f in (run_dir / "checkpoints" / "step_2" / "model").glob("*.safetensors"):
        after.update(load_file(str(f)))
    assert any(k in after and not torch.equal(v, after[k]) for k, v in before.items())


def _decode(model_path: Path, ids: list[int]) -> str:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_path)).decode(ids)
