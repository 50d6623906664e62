"""``examples/agent``: reproducible tasksets and demonstrations, and the explore config runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.models.tokenizer import HFChatTokenizer
from reinforge.models.tool_format import render_messages
from reinforge.workflows.calculator import CALCULATOR_TOOL, evaluate_expression
from reinforge.workflows.calculator_agent import SYSTEM_PROMPT

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"
FILES = ("train.jsonl", "test.jsonl", "demonstrations.jsonl")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_make_data_reproduces_the_shipped_files(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("agent_make_data", EXAMPLE / "make_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (EXAMPLE / "data" / name).read_bytes(), name
    assert sum((EXAMPLE / "data" / name).stat().st_size for name in FILES) < 200_000


def test_tasksets_are_right_and_disjoint() -> None:
    train = read_jsonl(EXAMPLE / "data" / "train.jsonl")
    test = read_jsonl(EXAMPLE / "data" / "test.jsonl")
    assert not {r["question"] for r in train} & {r["question"] for r in test}
    for row in train + test:
        assert row["question"] == f"What is {row['expression']}?"
        assert row["answer"] == str(evaluate_expression(row["expression"]))
        a, _, b = row["expression"].split()
        assert int(a) >= 1_000 and int(b) >= 100  # beyond a small model's mental arithmetic


def test_every_demonstration_tokenizes_as_the_agents_conversation(tiny_model_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = HFChatTokenizer(AutoTokenizer.from_pretrained(str(tiny_model_path)))
    train = {r["question"]: r for r in read_jsonl(EXAMPLE / "data" / "train.jsonl")}
    demos = read_jsonl(EXAMPLE / "data" / "demonstrations.jsonl")
    assert len(demos) >= 100
    for demo in demos:
        assert demo["tools"] == [CALCULATOR_TOOL]
        system, user, call, result, answer = demo["messages"]
        assert system == {"role": "system", "content": SYSTEM_PROMPT}
        row = train[user["content"]]
        (tool_call,) = call["tool_calls"]
        assert json.loads(tool_call["function"]["arguments"]) == {"expression": row["expression"]}
        assert result == {"role": "tool", "tool_call_id": tool_call["id"], "content": row["answer"]}
        assert answer == {"role": "assistant", "content": row["answer"]}
        text = render_messages(
            tokenizer, demo["messages"], demo["tools"], add_generation_prompt=False
        )
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids, skip_special_tokens=False) == text
        assert '"name": "calculator"' in text and row["expression"] in text
        assert text.endswith(f"<|im_start|>assistant\n{row['answer']}<|im_end|>\n")


def test_explore_config_runs_with_a_scripted_agent(tmp_path: Path) -> None:
    cfg = yaml.safe_load((EXAMPLE / "explore.yaml").read_text())
    call = '<tool_call>[{"name": "calculator", "arguments": {"expression": "\\1"}}]</tool_call>'
    # after a tool result, copy it; before one, call the calculator on the question
    replies = {r"<\|im_start\|>tool\n(\d+)<\|im_end\|>\n<\|im_start\|>assistant\n$": "\\1"}
    replies[r"What is ([^?]+)\?<\|im_end\|>\n<\|im_start\|>assistant\n$"] = call
    cfg["model"] = {"engine": "mock", "max_model_len": 4096, "mock": {"replies": replies}}
    cfg["model"]["max_response_tokens"] = 200
    cfg["buffer"]["batch_size"] = 8
    taskset = cfg["buffer"]["explorer_input"]["taskset"]
    taskset["path"] = str(EXAMPLE / taskset["path"])
    taskset["limit"] = 8
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    result = CliRunner().invoke(app, ["explore", "-c", str(path), "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    (step,) = [r for r in rows if "explore/tasks" in r]
    assert step["explore/workflow/accuracy/mean"] == 1.0
    assert step["explore/workflow/used_tool/mean"] == 1.0
    assert step["explore/workflow/agent_turns/mean"] == 2.0
    assert step["explore/workflow/tool_call_invalid/mean"] == 0.0


def test_grpo_config_loads_and_runs_the_same_agent() -> None:
    from reinforge.config import load_config

    cfg = load_config(EXAMPLE / "grpo.yaml")
    assert cfg.mode == "both"
    assert cfg.explorer.rollout_model.enable_history
    assert cfg.explorer.rollout_model.history_shape == "conversation"
    tasksets = [cfg.buffer.explorer_input.taskset, *cfg.buffer.explorer_input.eval_tasksets]
    assert {t.default_workflow_type for t in tasksets} == {"calculator_agent_workflow"}
    for taskset in tasksets:
        assert (EXAMPLE / taskset.path).is_file()


def test_sft_then_grpo_configs_chain_on_the_tiny_model(sft_then_grpo) -> None:
    """`make demo-agent` in miniature: sft.yaml trains and checkpoints, and grpo.yaml as
    shipped starts from that checkpoint through model.init_from."""
    sft_then_grpo(EXAMPLE)
