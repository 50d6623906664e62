"""Inference engines, one package each.

* ``openai``: any OpenAI-compatible server by URL (vLLM, SGLang, ``reinforge serve``),
  driven with token-id prompts so experiences stay token-exact.
* ``vllm``: vLLM servers that reinforge starts, health-checks, load-balances and
  updates with the trainer's weights.

The embedded ``hf`` engine and the deterministic ``mock`` engine live in
``reinforge.models.hf_engine`` and ``reinforge.models.mock_engine``.
"""
