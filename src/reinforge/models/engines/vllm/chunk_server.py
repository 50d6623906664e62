"""The driver's side of a streamed vLLM sync: an HTTP server that hands each chunk's
raw bytes to the workers that pull them (``bucket_transfer``).

One server lives for one sync (``with ChunkServer() as server``): a thread of the
standard library's ``ThreadingHTTPServer`` on a free port. ``publish`` puts a chunk
at a fresh unguessable path and returns its descriptor (the ``update_info`` of one
``/update_weights`` request); ``retire`` drops it once every replica has loaded it.
A GET writes the tensors' bytes straight from their memory (no serialised copy), so
the driver holds the chunk only as the tensors it already has. Leaving the ``with``
(normally or by an error part way) stops the thread, closes the port and drops every
chunk still published: nothing of a failed sync stays alive.

Where it listens follows the replicas (``address_for``): 127.0.0.1 when every replica
is on loopback (reinforge's own local servers); otherwise every interface, advertised
under this host's address on the route to the first remote replica (a Ray replica
on another node binds its node's IP), so workers there can pull from it; an IPv6
replica gets an IPv6 listener and a bracketed URL.
"""

from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from reinforge.models.engines.vllm.bucket_transfer import Chunk


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost
        return False


def address_for(replica_urls: Iterable[str]) -> tuple[str, str]:
    """``(bind, advertised)``: where the chunk server listens and the host its URLs name.

    All replicas on loopback: ``("127.0.0.1", "127.0.0.1")``. Otherwise every interface,
    advertised as the local address the kernel routes to the first remote replica (a UDP
    ``connect`` sends nothing; it only picks the route), which local replicas reach too.
    """
    remote = [
        parts
        for parts in (urlsplit(url) for url in replica_urls)
        if parts.hostname and not _is_loopback(parts.hostname)
    ]
    if not remote:
        return "127.0.0.1", "127.0.0.1"
    # the replica's own family: an IPv6 replica (or a name that resolves to one) is
    # reached over IPv6, and the server then listens on "::" (dual stack on Linux)
    family, _, _, _, sockaddr = socket.getaddrinfo(
        remote[0].hostname, remote[0].port or 80, type=socket.SOCK_DGRAM
    )[0]
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect(sockaddr)
        own = probe.getsockname()[0]
    return ("::" if family == socket.AF_INET6 else "0.0.0.0"), own


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        chunk = self.server.published.get(self.path.lstrip("/"))
        if chunk is None:
            self.send_error(404, "no such chunk (retired, or the sync ended)")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(chunk.nbytes))
        self.end_headers()
        for piece in chunk.pieces():
            self.wfile.write(piece)
        self.server.served += 1

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line a request on stderr is noise during a sync


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        if ":" in address[0]:  # an IPv6 host ("::" or a literal)
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        #: path (a random token) -> chunk; read by handler threads
        self.published: dict[str, Chunk] = {}
        #: chunks sent in full (one count a replica)
        self.served = 0

    def server_bind(self) -> None:
        # an IPv6 listener takes IPv4 callers too, whatever net.ipv6.bindv6only says
        if self.address_family == socket.AF_INET6:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class ChunkServer:
    """Serves the chunks of one sync to the replicas' workers; a context manager."""

    def __init__(self, host: str = "127.0.0.1", advertised: str | None = None) -> None:
        self.host = host
        #: the host name in the chunks' URLs (``host`` unless that is every interface)
        self.advertised = advertised or host
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ChunkServer:
        self._server = _Server((self.host, 0))
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="reinforge-vllm-chunks",
            daemon=True,
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("ChunkServer is not running (use it as `with ChunkServer()`)")
        host = f"[{self.advertised}]" if ":" in self.advertised else self.advertised
        return f"http://{host}:{self._server.server_address[1]}"

    @property
    def published(self) -> int:
        """How many chunks are held now."""
        return len(self._server.published) if self._server else 0

    @property
    def served(self) -> int:
        return self._server.served if self._server else 0

    def publish(self, chunk: Chunk) -> dict[str, Any]:
        """Serve ``chunk`` at a new path; its descriptor (an ``update_info``)."""
        token = secrets.token_urlsafe(16)
        descriptor = chunk.descriptor(f"{self.url}/{token}")
        self._server.published[token] = chunk
        return descriptor

    def retire(self, descriptor: dict[str, Any]) -> None:
        """Stop serving the chunk ``descriptor`` names (its bytes can be freed)."""
        if self._server is not None:
            self._server.published.pop(descriptor["url"].rsplit("/", 1)[1], None)

    def close(self) -> None:
        """Stop the thread, close the port and drop every chunk (idempotent)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.published.clear()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
