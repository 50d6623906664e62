"""Auxiliary model clients and the Judge: defaults, limits, parsing, retries, cache."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import openai
import pytest
from pydantic import BaseModel, Field

from reinforge.models.auxiliary import (
    AuxiliaryModelConfig,
    AuxiliaryModels,
    Judge,
    JudgeReplyError,
    UnknownAuxiliaryModel,
    extract_json,
    json_reply,
    pick_client,
)
from reinforge.models.auxiliary.judge import RETRY_TEMPERATURE
from reinforge.models.auxiliary.model import AuxiliaryModel
from reinforge.models.engines.mock import MockEngine


class Score(BaseModel):
    score: float = Field(ge=0, le=1)


def model(engine=None, **config) -> AuxiliaryModel:
    cfg = AuxiliaryModelConfig(name=config.pop("name", "judge"), engine="mock", **config)
    return AuxiliaryModel(cfg, engine=engine or MockEngine(replies=['{"score": 0.5}']))


def test_clients_are_official_sdk_objects_with_model_path():
    m = model()
    assert isinstance(m.client, openai.OpenAI) and isinstance(m.async_client, openai.AsyncOpenAI)
    assert m.client.model_path == "judge" and m.client.auxiliary is m
    reply = m.client.chat.completions.create(
        model=m.client.model_path, messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content == '{"score": 0.5}'
    m.close()


def test_sampling_defaults_fill_what_a_request_leaves_unset():
    seen = []

    class Recording(MockEngine):
        def submit(self, ids, params):
            seen.append(params)
            return super().submit(ids, params)

    m = model(Recording(replies=["ok"]), temperature=0.0, top_p=0.9, max_response_tokens=7)
    msgs = [{"role": "user", "content": "hi"}]
    m.client.chat.completions.create(model="judge", messages=msgs)
    m.client.chat.completions.create(model="judge", messages=msgs, temperature=0.5, max_tokens=3)
    assert (seen[0].temperature, seen[0].top_p, seen[0].max_tokens) == (0.0, 0.9, 7)
    assert (seen[1].temperature, seen[1].max_tokens) == (0.5, 3)
    m.close()


def test_max_concurrency_bounds_requests_in_flight():
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    class Slow(MockEngine):
        def submit(self, ids, params):
            fut: Future = Future()

            def answer():
                with lock:
                    state["now"] += 1
                    state["peak"] = max(state["peak"], state["now"])
                time.sleep(0.05)
                with lock:
                    state["now"] -= 1
                fut.set_result(MockEngine.submit(self, ids, params).result())

            threading.Thread(target=answer).start()
            return fut

    m = model(Slow(replies=["x"]), max_concurrency=2)
    msgs = [{"role": "user", "content": "hi"}]
    with ThreadPoolExecutor(6) as pool:
        list(
            pool.map(
                lambda _: m.client.chat.completions.create(model="judge", messages=msgs), range(6)
            )
        )
    assert state["peak"] == 2
    m.close()


def test_extract_json_finds_fenced_whole_or_last_object():
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('{"a": 2}') == {"a": 2}
    assert extract_json('I think {"a": 1} no wait {"a": 3} final') == {"a": 3}
    assert extract_json("scores: [0.1, 0.9]") == [0.1, 0.9]
    with pytest.raises(JudgeReplyError, match="no JSON"):
        extract_json("nothing here")


def test_json_reply_validates_and_classifies_out_of_range():
    parse = json_reply(Score)
    assert parse('{"score": 0.25}').score == 0.25
    with pytest.raises(JudgeReplyError) as err:
        parse('{"score": 3}')
    assert err.value.kind == "out_of_range"
    with pytest.raises(JudgeReplyError) as err:
        parse('{"points": 3}')
    assert err.value.kind == "unparseable"


def test_judge_retries_then_reports_failure_without_raising():
    replies = iter(["garbage", "still garbage", '{"score": 0.7}'])
    m = model(MockEngine(replies=lambda text, i: next(replies)), max_judge_attempts=3, cache=False)
    verdict = Judge(m.client).ask([{"role": "user", "content": "rate"}], json_reply(Score))
    assert verdict.ok and verdict.value.score == 0.7 and verdict.attempts == 3
    m2 = model(MockEngine(replies=["never json"]), max_judge_attempts=2)
    verdict = Judge(m2.client).ask([{"role": "user", "content": "rate"}], json_reply(Score))
    assert not verdict.ok and verdict.reason == "unparseable" and verdict.attempts == 2
    assert verdict.metrics()["judge_success"] == 0.0
    m.close()
    m2.close()


def test_judge_cache_answers_repeats_and_only_caches_successes():
    calls = []
    m = model(MockEngine(replies=lambda text, i: calls.append(1) or '{"score": 1}'))
    judge = Judge(m.client)
    msgs = [{"role": "user", "content": "same"}]
    first, second = judge.ask(msgs, json_reply(Score)), judge.ask(msgs, json_reply(Score))
    assert not first.cached and second.cached and len(calls) == 1
    assert m.cache.hits == 1
    m.close()


def test_judge_timeout_and_unreachable_reasons():
    hung = model(MockEngine(), request_timeout=0.1, max_judge_attempts=1)
    hung.engine.submit = lambda ids, params: Future()
    verdict = Judge(hung.client).ask([{"role": "user", "content": "x"}], json_reply(Score))
    assert verdict.reason == "timeout"
    hung.close()
    remote = AuxiliaryModels.from_configs(
        [
            AuxiliaryModelConfig(
                name="far",
                engine="openai",
                openai={"base_url": "http://127.0.0.1:9"},
                max_judge_attempts=1,
            )
        ]
    )
    verdict = Judge(remote.clients()[0]).ask([{"role": "user", "content": "x"}], json_reply(Score))
    assert verdict.reason == "unreachable"
    remote.close()


def test_async_judge_uses_the_async_client():
    m = model()

    async def go():
        return await Judge(m.async_client).ask_async(
            [{"role": "user", "content": "x"}], json_reply(Score)
        )

    verdict = asyncio.run(go())
    assert verdict.ok and verdict.value.score == 0.5
    m.close()


def test_json_schema_mode_sends_response_format():
    bodies = []

    class Recorder:
        class chat:
            class completions:
                @staticmethod
                def create(**body):
                    bodies.append(body)
                    raise openai.APIConnectionError(request=None)  # type: ignore[arg-type]

    Judge(Recorder(), schema_mode="json_schema", attempts=1).ask(
        [], json_reply(Score), schema=Score
    )
    assert bodies[0]["response_format"]["json_schema"]["schema"]["properties"]["score"]


def _completion(text: str):
    class Message:
        content = text

    class Choice:
        message = Message

    class Completion:
        choices = [Choice]

    return Completion


def test_ask_and_ask_async_retry_the_same_way():
    """Greedy first, then the retry temperature, until a reply parses; a set temperature stays."""

    def client(is_async: bool, bodies: list[dict]):
        replies = iter(["no json", "still none", '{"score": 0.4}', '{"score": 0.9}'])

        def create(**body):
            bodies.append(body)
            return _completion(next(replies))

        async def create_async(**body):
            return create(**body)

        class Client:
            class chat:
                class completions:
                    pass

        Client.chat.completions.create = staticmethod(create_async if is_async else create)
        return Client()

    sync_bodies: list[dict] = []
    verdict = Judge(client(False, sync_bodies), attempts=4).ask([], json_reply(Score))
    async_bodies: list[dict] = []
    judge = Judge(client(True, async_bodies), attempts=4)
    async_verdict = asyncio.run(judge.ask_async([], json_reply(Score)))
    for v, bodies in ((verdict, sync_bodies), (async_verdict, async_bodies)):
        assert v.ok and v.value.score == 0.4 and v.attempts == 3
        assert [b.get("temperature") for b in bodies] == [
            None,
            RETRY_TEMPERATURE,
            RETRY_TEMPERATURE,
        ]
    warm: list[dict] = []
    Judge(client(False, warm), attempts=2).ask([], json_reply(Score), temperature=0.3)
    assert [b["temperature"] for b in warm] == [0.3, 0.3]


def test_pick_client_by_name_index_and_errors():
    models = AuxiliaryModels([model(name="a"), model(name="b")])
    clients = models.clients()
    assert pick_client(clients, None, "w") is clients[0]
    assert pick_client(clients, "b", "w") is clients[1]
    assert pick_client(clients, 1, "w") is clients[1]
    with pytest.raises(
        UnknownAuxiliaryModel, match=r"w asks for auxiliary model 'c'.*\['a', 'b'\]"
    ):
        pick_client(clients, "c", "w")
    with pytest.raises(UnknownAuxiliaryModel, match="declares none"):
        pick_client([], "c", "w")
    ops = models.for_operators()
    assert set(ops) == {"a", "b", 0, 1} and ops["b"][0] is models.models[1].async_client
    models.close()


def test_config_checks_names_and_share_policy():
    from reinforge.explorer.explorer_config import ExplorerConfig

    with pytest.raises(ValueError, match="unique"):
        ExplorerConfig(auxiliary_models=[{"name": "j"}, {"name": "j"}])
    with pytest.raises(ValueError, match="share_policy uses the policy's engine"):
        AuxiliaryModelConfig(name="self", share_policy=True, engine="hf")


def test_share_policy_answers_with_the_policy_engine_without_history():
    policy = MockEngine(replies=["policy says hi"])
    models = AuxiliaryModels.from_configs(
        [AuxiliaryModelConfig(name="self", share_policy=True)], policy
    )
    client = models.clients()[0]
    reply = client.chat.completions.create(
        model=client.model_path, messages=[{"role": "user", "content": "x"}]
    )
    assert reply.choices[0].message.content == "policy says hi"
    models.close()  # does not close the policy's engine
    assert policy.requests == 1


def test_remote_specs_rebuild_clients_in_another_process_or_refuse_hf():
    models = AuxiliaryModels.from_configs(
        [
            AuxiliaryModelConfig(name="m", engine="mock", mock={"replies": ["r"]}),
            AuxiliaryModelConfig(
                name="o", engine="openai", model_path="big", openai={"base_url": "http://h:1"}
            ),
        ]
    )
    specs = json.loads(json.dumps(models.remote_specs()))  # plain data
    rebuilt = AuxiliaryModels.from_specs(specs)
    assert rebuilt.names == ["m", "o"] and rebuilt.clients()[1].model_path == "big"
    rebuilt.close()
    models.close()
    hf = AuxiliaryModel(AuxiliaryModelConfig(name="h", engine="hf"), engine=MockEngine())
    with pytest.raises(ValueError, match="Ray runner actors cannot reach"):
        hf.remote_spec()
    hf.close()
