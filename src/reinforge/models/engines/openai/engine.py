"""``OpenAIEngine``: an OpenAI-compatible server as the rollout engine, token-exact.

The workflow side does not change: ModelWrapper renders chats with the policy's
own tokenizer (loaded locally from ``tokenizer_path``) and hands the engine token
ids; the engine sends them as the prompt and reads back the sampled ids and their
log-probabilities. On construction it asks each server for one token to check that
it returns both, so a server that cannot is refused before any rollout starts.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from reinforge.models.engine import Completion, InferenceEngine, SamplingParams, failed_future
from reinforge.models.engines.openai.client import EndpointPool, OpenAIHTTP
from reinforge.models.engines.openai.protocol import (
    completion_body,
    parse_completions,
    parse_prompt_logprobs,
    score_body,
    stamp_version,
)


def load_chat_tokenizer(path: str | Path) -> Any:
    """The policy's tokenizer from a local model directory (never from a hub)."""
    import json

    from transformers import AutoTokenizer

    from reinforge.models.tokenizer import HFChatTokenizer

    path = Path(path)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    extra: list[int] = []
    gen = path / "generation_config.json"
    if gen.is_file():
        eos = json.loads(gen.read_text()).get("eos_token_id")
        extra = [eos] if isinstance(eos, int) else list(eos or [])
    return HFChatTokenizer(tokenizer, extra_eos_ids=extra)


class OpenAIEngine(InferenceEngine):
    """Samples from one or more OpenAI-compatible servers serving the same model."""

    def __init__(
        self,
        urls: list[str] | str,
        *,
        model: str,
        tokenizer_path: str | Path,
        api_key: str | None = None,
        max_model_len: int = 4096,
        timeout: float = 600.0,
        max_retries: int = 3,
        check: bool = True,
    ) -> None:
        super().__init__()
        self.served_model = model
        self.model_path = str(tokenizer_path)
        self.tokenizer = load_chat_tokenizer(tokenizer_path)
        self.max_model_len = max_model_len
        self.pool = EndpointPool([urls] if isinstance(urls, str) else list(urls))
        self.http = OpenAIHTTP(self.pool, api_key=api_key, timeout=timeout, max_retries=max_retries)
        if check:
            self.check_servers()

    # ---- what a request is sent as -------------------------------------------------

    def request_model(self) -> str:
        """The model name sent with each request (the vLLM engine names its LoRA here)."""
        return self.served_model

    def set_urls(self, urls: list[str]) -> None:
        """Point the engine at other replicas (e.g. after a restart on another port)."""
        self.pool.replace([u.rstrip("/") for u in urls])

    def check_servers(self) -> None:
        """Sample one token from every healthy server; raise if ids or logprobs are missing."""
        probe = SamplingParams(n=1, max_tokens=1, temperature=1.0)
        bos = self.tokenizer.encode("Hi")
        for endpoint in self.pool.endpoints:
            if not endpoint.healthy:
                continue
            body = completion_body(self.request_model(), bos, probe)

            async def ask(url: str = endpoint.url, body: dict = body) -> list[Completion]:
                response = await self.http.request("POST", url + "/v1/completions", json=body)
                if response.status_code != 200:
                    raise ConnectionError(
                        f"server {url} answered {response.status_code} to a one-token "
                        f"completion for model '{body['model']}': {response.text[:300]}"
                    )
                return parse_completions(response.json(), probe, url)

            self.http.call(ask(), timeout=self.http.timeout)

    # ---- InferenceEngine ---------------------------------------------------------------

    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Future[list[Completion]]:
        if len(prompt_ids) >= self.max_model_len:
            return failed_future(
                ValueError(
                    f"prompt has {len(prompt_ids)} tokens; max_model_len is {self.max_model_len}"
                )
            )
        copies = 1
        if params.temperature == 0 and params.n > 1:
            # greedy replies are all the same; vLLM refuses n > 1 at temperature 0
            copies, params = params.n, dataclasses.replace(params, n=1)
        body = completion_body(self.request_model(), prompt_ids, params)
        version = self.model_version  # read with the model name the request carries

        def parse(data: dict, url: str) -> list[Completion]:
            out = stamp_version(parse_completions(data, params, url), version)
            return out + [dataclasses.replace(out[0]) for _ in range(copies - 1)]

        return self.http.submit("/v1/completions", body, parse)

    def submit_score(self, token_ids: list[int]) -> Future[list[float]]:
        body = score_body(self.request_model(), token_ids)
        return self.http.submit(
            "/v1/completions", body, lambda data, url: parse_prompt_logprobs(data, token_ids, url)
        )

    def close(self) -> None:
        self.http.close()
