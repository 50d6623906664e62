"""`reinforge explore` with the real embedded SmolLM2-135M stores token-exact experiences."""

import asyncio
import json

import pytest
import torch

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.config import config_from_dict
from reinforge.explorer import Explorer
from reinforge.models import resolve_model_path


@pytest.mark.slow
def test_stored_tokens_decode_and_logprobs_match_a_fresh_forward_pass(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for q, a in [("What is 2 + 3?", "5"), ("What is 10 - 4?", "6"), ("What is 3 * 3?", "9")]:
            fh.write(json.dumps({"question": q, "answer": a}) + "\n")
    cfg = config_from_dict(
        {
            "run_dir": str(tmp_path / "run"),
            "model": {
                "model_path": "smollm2-135m-instruct",
                "engine": "hf",
                "max_response_tokens": 24,
            },
            "buffer": {
                "batch_size": 3,
                "explorer_input": {
                    "taskset": {
                        "path": "tasks.jsonl",
                        "format": {"prompt_key": "question", "response_key": "answer"},
                        "repeat_times": 2,
                        "default_workflow_type": "simple_workflow",
                        "default_reward_fn_type": "accuracy_reward",
                    }
                },
            },
            "explorer": {"runner_concurrency": 3},
        },
        config_dir=str(tmp_path),
    )
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
    )
    try:
        summary = asyncio.run(explorer.explore())
    finally:
        explorer.close()
    assert summary.status_counts == {"ok": 3}
    exps = SQLiteExperienceStorage(cfg.storage_path).read()
    assert len(exps) == 6

    path = resolve_model_path("smollm2-135m-instruct")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    for exp in exps:
        assert tokenizer.decode(exp.tokens[: exp.prompt_length]) == exp.prompt_text
        assert tokenizer.decode(exp.response_tokens, skip_special_tokens=True) == exp.response_text
        assert exp.reward in (0.0, 1.0)
        with torch.no_grad():
            logits = model(exp.tokens[None]).logits[0, :-1].float()
        fresh = torch.log_softmax(logits, -1).gather(-1, exp.tokens[1:, None])[:, 0][
            exp.prompt_length - 1 :
        ]
        torch.testing.assert_close(exp.logprobs, fresh, atol=2e-3, rtol=0)
