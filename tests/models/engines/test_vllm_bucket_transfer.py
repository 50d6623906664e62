"""The transport of a streamed vLLM sync without a server (``vllm.bucket_transfer``,
``vllm.chunk_server`` and the worker extension's ``fetch_tensors``): chunks hold at
most the bound (a larger tensor alone), a tensor under two names (tied embeddings) goes
once, floating tensors arrive in the servers' dtype, the driver serves the tensors' own
memory, and a worker pulling a chunk over real HTTP gets every tensor back exactly. The
chunk server keeps nothing once its sync ends, even when the sync failed."""

from __future__ import annotations

import importlib.util
import json
import socket
import urllib.error
import weakref
from pathlib import Path
from types import ModuleType

import pytest
import torch

from reinforge.models.engines.vllm import server
from reinforge.models.engines.vllm.bucket_transfer import (
    ALIGN,
    WEIGHT_TRANSFER_ARGS,
    Chunk,
    pack_chunks,
)
from reinforge.models.engines.vllm.chunk_server import ChunkServer, address_for


def _worker() -> ModuleType:
    """The worker extension, loaded by path: without vLLM installed it registers no
    backend, but its ``fetch_tensors`` is the code a vLLM worker runs."""
    path = Path(server.VLLM_SIDE_DIR) / "reinforge_vllm_worker.py"
    spec = importlib.util.spec_from_file_location("reinforge_vllm_worker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fetch_tensors = _worker().fetch_tensors


def _pull(chunks: ChunkServer, chunk: Chunk) -> dict[str, torch.Tensor]:
    """What a worker loads for ``chunk``: the descriptor goes through JSON as vLLM's
    request does, the bytes over HTTP."""
    info = json.loads(json.dumps(chunks.publish(chunk)))
    try:
        return dict(fetch_tensors(info["url"], info["nbytes"], info["tensors"]))
    finally:
        chunks.retire(info)


def test_chunks_are_bounded_dedupe_tied_weights_and_cast_to_the_servers_dtype() -> None:
    torch.manual_seed(0)
    embed = torch.randn(64, 32)  # 8 KiB in fp32
    bucket = {
        "model.embed_tokens.weight": embed,
        "model.layers.0.mlp.up_proj.weight": torch.randn(16, 32),
        "model.layers.0.mlp.down_proj.weight": torch.randn(32, 16),
        "model.norm.weight": torch.randn(32),
        "lm_head.weight": embed,  # tied: the same tensor
        "model.rotary.inv_freq_steps": torch.arange(4),  # not floating: kept as is
    }
    bound = 2048
    chunks = list(pack_chunks(bucket, "bfloat16", chunk_bytes=bound))
    assert len(chunks) > 2
    got: dict[str, torch.Tensor] = {}
    with ChunkServer() as served:
        for chunk in chunks:
            assert chunk.nbytes <= bound or len(chunk.tensors) == 1
            got.update(_pull(served, chunk))
    assert "lm_head.weight" not in got  # sent once, under its first name
    assert got.keys() == bucket.keys() - {"lm_head.weight"}
    for name, tensor in got.items():
        want = bucket[name]
        if want.is_floating_point():
            assert tensor.dtype == torch.bfloat16
            assert torch.equal(tensor, want.to(torch.bfloat16)), name
        else:
            assert tensor.dtype == want.dtype and torch.equal(tensor, want), name


def test_a_float32_server_gets_the_exact_tensors_served_from_their_own_memory() -> None:
    bucket = {"w": torch.randn(8, 8), "b": torch.randn(8), "scale": torch.tensor(0.5)}
    (chunk,) = list(pack_chunks(bucket, "float32"))
    # no copy on the driver: the chunk holds the trainer's tensors themselves
    assert [t.data_ptr() for _, t in chunk.tensors] == [v.data_ptr() for v in bucket.values()]
    with ChunkServer() as served:
        got = _pull(served, chunk)
    assert all(torch.equal(got[k], v) and got[k].shape == v.shape for k, v in bucket.items())


def test_tensors_of_mixed_dtypes_and_odd_sizes_start_aligned_and_come_back() -> None:
    bucket = {
        "a": torch.randn(3, dtype=torch.float32),  # 12 bytes: the next one needs padding
        "b": torch.arange(5, dtype=torch.int64),
        "c": torch.randn(7).to(torch.bfloat16),
        "d": torch.tensor([True, False, True]),
        "e": torch.randn(2, 3, dtype=torch.float64),
    }
    (chunk,) = list(pack_chunks(bucket, None))
    assert all(offset % ALIGN == 0 for offset in chunk.offsets)
    assert chunk.nbytes == sum(len(p) for p in chunk.pieces())
    with ChunkServer() as served:
        got = _pull(served, chunk)
    for name, want in bucket.items():
        assert got[name].dtype == want.dtype and torch.equal(got[name], want), name


def _own_address(family: socket.AddressFamily = socket.AF_INET) -> str:
    """This machine's address on its default route (what another node would reach);
    loopback where it has no route of that family."""
    target, loopback = (("192.0.2.1", 9), "127.0.0.1")
    if family == socket.AF_INET6:  # a documentation address of each family
        target, loopback = (("2001:db8::1", 9), "::1")
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(target)  # nothing is sent
        except OSError:  # no route at all
            return loopback
        return probe.getsockname()[0]


def test_replicas_on_another_host_pull_from_an_address_they_can_reach() -> None:
    local = ["http://127.0.0.1:8000", "http://localhost:8001"]
    assert address_for(local) == ("127.0.0.1", "127.0.0.1")
    own = _own_address()
    if own.startswith("127."):
        pytest.skip("this machine has no address but loopback")
    # a replica that bound its node's IP (a Ray replica on another node looks the same)
    bind, advertised = address_for([*local, f"http://{own}:8002"])
    assert (bind, advertised) == ("0.0.0.0", own)
    (chunk,) = list(pack_chunks({"w": torch.randn(4, 4)}, "float32"))
    with ChunkServer(bind, advertised) as served:
        assert served.url.startswith(f"http://{own}:")
        got = _pull(served, chunk)  # over the advertised, non-loopback address
    assert torch.equal(got["w"], chunk.tensors[0][1])


def test_an_ipv6_replica_pulls_over_ipv6() -> None:
    own = _own_address(socket.AF_INET6)
    if own == "::1" or own.startswith("fe80"):
        pytest.skip("this machine has no routable IPv6 address")
    bind, advertised = address_for(["http://127.0.0.1:8000", f"http://[{own}]:8002"])
    assert (bind, advertised) == ("::", own)
    (chunk,) = list(pack_chunks({"w": torch.randn(4, 4)}, "float32"))
    with ChunkServer(bind, advertised) as served:
        assert served.url.startswith(f"http://[{own}]:")  # bracketed, as URLs need
        got = _pull(served, chunk)  # over IPv6
        local = dict(fetch_tensors(*_local_copy(served, chunk)))  # a replica on 127.0.0.1
    assert torch.equal(got["w"], chunk.tensors[0][1])
    assert torch.equal(local["w"], chunk.tensors[0][1])


def _local_copy(chunks: ChunkServer, chunk: Chunk) -> tuple[str, int, list]:
    """``chunk`` published again, its URL pointed at 127.0.0.1 (what a replica on this
    machine's IPv4 loopback reaches)."""
    info = chunks.publish(chunk)
    path = info["url"].rsplit("/", 1)[1]
    port = info["url"].rsplit(":", 1)[1].split("/")[0]
    return f"http://127.0.0.1:{port}/{path}", info["nbytes"], info["tensors"]


def test_a_retired_chunk_is_gone_and_a_short_body_is_an_error() -> None:
    (chunk,) = list(pack_chunks({"w": torch.randn(4, 4)}, "float32"))
    with ChunkServer() as served:
        info = served.publish(chunk)
        assert served.published == 1
        served.retire(info)
        assert served.published == 0
        with pytest.raises(urllib.error.HTTPError, match="404"):
            fetch_tensors(info["url"], info["nbytes"], info["tensors"])
        info = served.publish(chunk)
        with pytest.raises(RuntimeError, match="sent 64 of the chunk's 128 bytes"):
            fetch_tensors(info["url"], 2 * info["nbytes"], info["tensors"])


def test_nothing_of_a_failed_sync_stays_alive() -> None:
    """A sync that fails part way leaves the ``with``: the port is closed, the serving
    thread has ended and no chunk (no tensor) is held any more."""
    weights = torch.randn(4, 4)
    freed = weakref.ref(weights)
    (chunk,) = list(pack_chunks({"w": weights}, "float32"))
    del weights
    served = ChunkServer()
    with pytest.raises(RuntimeError, match="a replica failed"), served:
        served.publish(chunk)
        port = int(served.url.rsplit(":", 1)[1])
        thread = served._thread
        del chunk
        raise RuntimeError("a replica failed")
    assert served.published == 0
    assert freed() is None  # the trainer's tensor is not held by the server
    assert thread is not None and not thread.is_alive()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass
    with pytest.raises(RuntimeError, match="not running"):
        served.publish(Chunk())


def test_servers_are_started_with_the_backend_their_workers_register() -> None:
    """The name in the server flag is the one the worker extension registers."""
    flag, value = WEIGHT_TRANSFER_ARGS
    assert flag == "--weight-transfer-config"
    assert json.loads(value) == {"backend": _worker().HTTP_BACKEND}
