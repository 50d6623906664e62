"""Auxiliary models at run time: an engine (or a server, or the policy) behind official
``openai`` clients, built once per run and shared by every workflow and operator."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import httpx
import openai

from reinforge.models.auxiliary.cache import VerdictCache
from reinforge.models.auxiliary.config import AuxiliaryModelConfig
from reinforge.models.auxiliary.transport import (
    AsyncLimitedTransport,
    LimitedTransport,
    RoundRobin,
)

_LOCAL = "http://reinforge.local/v1"


class AuxiliaryOpenAI(openai.OpenAI):
    """An ``openai.OpenAI`` client for one auxiliary model. As in Trinity-RFT,
    ``model_path`` is the name to pass as ``model=``; ``auxiliary`` is the run-time
    model (its config, verdict cache and async client)."""

    model_path: str
    auxiliary: AuxiliaryModel


class AsyncAuxiliaryOpenAI(openai.AsyncOpenAI):
    """The ``openai.AsyncOpenAI`` twin of ``AuxiliaryOpenAI``."""

    model_path: str
    auxiliary: AuxiliaryModel


class AuxiliaryModel:
    """One configured auxiliary model. ``engine`` is what answers in-process (an engine
    this object owns, or the policy's for ``share_policy``); without one the clients
    talk HTTP to ``urls`` (a remote server, or vLLM servers an owned engine started)."""

    def __init__(
        self,
        config: AuxiliaryModelConfig,
        *,
        engine: Any = None,
        owns_engine: bool = True,
        urls: Any = None,
        served_model: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.engine = engine if engine is not None else None
        self._owns_engine = owns_engine
        self.cache = VerdictCache() if config.cache else None
        self._urls = (
            None if urls is None else (urls if callable(urls) else (lambda u=list(urls): u))
        )
        self._api_key = api_key
        self._wrapper_lock = threading.Lock()
        self._remote_engine: Any = None  # the token-level client ``wrapper`` made
        defaults = config.sampling_defaults()
        limit = config.max_concurrency
        timeout = httpx.Timeout(config.request_timeout, connect=10.0)
        self._wrapper = None
        if urls is None:
            from reinforge.models.model_wrapper import ModelWrapper
            from reinforge.models.openai_api.clients import (
                AsyncInProcessTransport,
                InProcessTransport,
            )
            from reinforge.models.openai_api.service import OpenAIService

            self._wrapper = ModelWrapper(
                engine,
                model_name=config.name,
                default_max_tokens=config.max_response_tokens,
                request_timeout=config.request_timeout,
            )
            service = OpenAIService(self._wrapper, served_name=config.name)
            sync_inner: httpx.BaseTransport = InProcessTransport(service)
            async_inner: httpx.AsyncBaseTransport = AsyncInProcessTransport(service)
            router = None
            base_url, key, self.model_path = _LOCAL, "in-process", config.name
        else:
            sync_inner, async_inner = httpx.HTTPTransport(), httpx.AsyncHTTPTransport()
            router = RoundRobin(urls if callable(urls) else (lambda u=list(urls): u))
            first = (urls() if callable(urls) else list(urls)) or ["http://unreachable"]
            base_url = first[0].rstrip("/") + "/v1"
            key = api_key or "EMPTY"
            self.model_path = served_model or config.model_path
        sync_transport = LimitedTransport(
            sync_inner, defaults, threading.BoundedSemaphore(limit), router
        )
        async_transport = AsyncLimitedTransport(async_inner, defaults, limit, router)
        self.client = AuxiliaryOpenAI(
            api_key=key,
            base_url=base_url,
            http_client=httpx.Client(transport=sync_transport, base_url=base_url, timeout=timeout),
            max_retries=0,
            timeout=timeout,
        )
        self.async_client = AsyncAuxiliaryOpenAI(
            api_key=key,
            base_url=base_url,
            http_client=httpx.AsyncClient(
                transport=async_transport, base_url=base_url, timeout=timeout
            ),
            max_retries=0,
            timeout=timeout,
        )
        for client in (self.client, self.async_client):
            client.model_path = self.model_path
            client.auxiliary = self

    @property
    def wrapper(self) -> Any:
        """This model as a ``ModelWrapper`` (``chat``, ``logprobs``...), as workflows see
        it in ``auxiliary_model_wrappers``: an in-process model's own; for one served
        over HTTP, a wrapper over a token-level client of the same servers, built on
        first use (it reads the model's tokenizer from ``model_path``)."""
        if self._wrapper is None:
            with self._wrapper_lock:
                if self._wrapper is None:
                    self._wrapper = self._served_wrapper()
        return self._wrapper

    def _served_wrapper(self) -> Any:
        from reinforge.models.model_wrapper import ModelWrapper

        config, engine = self.config, self.engine
        if engine is None:  # served over HTTP only (engine: openai, or a Ray actor's copy)
            from reinforge.models.catalog import resolve_model_path
            from reinforge.models.engines.openai import OpenAIEngine

            try:
                tokenizer_path = resolve_model_path(config.model_path, config.cache_dir)
                engine = OpenAIEngine(
                    list(self._urls()) if self._urls is not None else [],
                    model=self.model_path,
                    tokenizer_path=tokenizer_path,
                    api_key=self._api_key,
                    max_model_len=config.max_model_len or 4096,
                    timeout=config.request_timeout,
                    check=False,
                )
            except Exception as exc:
                raise RuntimeError(
                    f"auxiliary model '{self.name}' is served over HTTP; as a ModelWrapper "
                    "(auxiliary_model_wrappers) it talks token ids to the server and needs "
                    f"the model's tokenizer, read from model_path '{config.model_path}': {exc}"
                ) from exc
            self._remote_engine = engine
        return ModelWrapper(
            engine,
            model_name=config.name,
            default_max_tokens=config.max_response_tokens,
            request_timeout=config.request_timeout,
        )

    def remote_spec(self) -> dict[str, Any]:
        """What another process (a Ray runner actor) needs to build the same clients:
        the config, plus the server URLs of a model served over HTTP."""
        spec: dict[str, Any] = {"config": self.config.model_dump()}
        if self._urls is not None:
            spec["urls"] = list(self._urls())
            spec["served_model"] = self.model_path
            spec["api_key"] = self._api_key
        elif not self.config.share_policy and self.config.engine != "mock":
            raise ValueError(
                f"auxiliary model '{self.name}' runs in-process (engine {self.config.engine}), "
                "which Ray runner actors cannot reach; with cluster.backend: ray give it "
                "engine openai or vllm (or mock, or share_policy)"
            )
        return spec

    def close(self) -> None:
        if self._wrapper is not None:
            self._wrapper.close()
        if self._remote_engine is not None:
            self._remote_engine.close()
        self.client.close()
        if self._owns_engine and self.engine is not None:
            self.engine.close()


def build_auxiliary_model(
    config: AuxiliaryModelConfig, policy_engine: Any = None
) -> AuxiliaryModel:
    """The run-time model ``config`` describes (loading weights or starting servers)."""
    if config.share_policy:
        if policy_engine is None:
            raise ValueError(
                f"auxiliary model '{config.name}' shares the policy, but there is none"
            )
        return AuxiliaryModel(config, engine=policy_engine, owns_engine=False)
    if config.engine == "openai":
        o = config.openai
        urls = [o.base_url] if isinstance(o.base_url, str) else list(o.base_url)
        return AuxiliaryModel(
            config, urls=urls, served_model=o.model or config.model_path, api_key=o.api_key
        )
    engine = config.create_engine()
    if config.engine == "vllm":
        # talk to the servers directly: they template chats and decode JSON themselves
        def healthy() -> list[str]:
            return [e.url for e in engine.pool.endpoints if e.healthy]

        return AuxiliaryModel(
            config, engine=engine, urls=healthy, served_model=engine.request_model()
        )
    return AuxiliaryModel(config, engine=engine)


class UnknownAuxiliaryModel(LookupError):
    """A workflow or operator asked for an auxiliary model the config does not declare."""


class AuxiliaryModels:
    """Every auxiliary model of a run, in config order, addressable by name or index."""

    def __init__(self, models: Sequence[AuxiliaryModel] = ()) -> None:
        self.models = list(models)
        names = [m.name for m in self.models]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(
                f"explorer.auxiliary_models: names must be unique; repeated: {duplicates}"
            )

    @classmethod
    def from_configs(
        cls, configs: Sequence[AuxiliaryModelConfig], policy_engine: Any = None
    ) -> AuxiliaryModels:
        built: list[AuxiliaryModel] = []
        try:
            for config in configs:
                built.append(build_auxiliary_model(config, policy_engine))
        except BaseException:
            for model in built:
                model.close()
            raise
        return cls(built)

    @classmethod
    def from_specs(
        cls, specs: Sequence[dict[str, Any]], policy_engine: Any = None
    ) -> AuxiliaryModels:
        """Rebuild models from ``AuxiliaryModel.remote_spec()`` in another process."""
        built = []
        for spec in specs:
            config = AuxiliaryModelConfig.model_validate(spec["config"])
            if "urls" in spec:
                built.append(
                    AuxiliaryModel(
                        config,
                        urls=spec["urls"],
                        served_model=spec["served_model"],
                        api_key=spec.get("api_key"),
                    )
                )
            else:
                built.append(build_auxiliary_model(config, policy_engine))
        return cls(built)

    def remote_specs(self) -> list[dict[str, Any]]:
        return [m.remote_spec() for m in self.models]

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.models]

    def clients(self) -> list[AuxiliaryOpenAI]:
        """What workflows receive as ``auxiliary_models`` (sync clients, config order)."""
        return [m.client for m in self.models]

    def for_operators(self) -> dict[str | int, list[AsyncAuxiliaryOpenAI]]:
        """What operators receive through ``set_auxiliary_model``: by name and by index."""
        out: dict[str | int, list[AsyncAuxiliaryOpenAI]] = {}
        for i, model in enumerate(self.models):
            out[model.name] = [model.async_client]
            out[i] = [model.async_client]
        return out

    def close(self) -> None:
        for model in self.models:
            model.close()

    def __len__(self) -> int:
        return len(self.models)


def pick_client(clients: Sequence[Any] | None, name: str | int | None, asker: str) -> Any:
    """The auxiliary client ``asker`` (a workflow or operator) asks for: by name, by
    index, or the first when ``name`` is None. Raises ``UnknownAuxiliaryModel`` naming
    both the asker and what the config declares."""
    clients = list(clients or [])
    declared = [
        getattr(getattr(c, "auxiliary", None), "name", f"#{i}") for i, c in enumerate(clients)
    ]
    if not clients:
        raise UnknownAuxiliaryModel(
            f"{asker} needs an auxiliary model"
            + (f" named '{name}'" if isinstance(name, str) else "")
            + ", but the config declares none; add one under explorer.auxiliary_models"
        )
    if name is None:
        return clients[0]
    if isinstance(name, int):
        if 0 <= name < len(clients):
            return clients[name]
    else:
        for client, declared_name in zip(clients, declared, strict=True):
            if declared_name == name:
                return client
    raise UnknownAuxiliaryModel(
        f"{asker} asks for auxiliary model {name!r}, but explorer.auxiliary_models "
        f"declares {declared}"
    )
