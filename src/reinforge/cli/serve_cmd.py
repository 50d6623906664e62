"""``reinforge serve``: the config's model behind an OpenAI-compatible HTTP API."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from reinforge.cli.common import ConfigOpt, SetOpt, err, fail, load, prepare_runtime, user_errors


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    config: ConfigOpt,
    host: Annotated[
        str,
        typer.Option(help="Address to bind; 0.0.0.0 exposes the server to the network."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (0 picks a free one).")] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="REINFORGE_API_KEY",
            help="Require 'Authorization: Bearer KEY' on every /v1 route (/health stays open).",
            show_default=False,
        ),
    ] = None,
    served_model_name: Annotated[
        str | None,
        typer.Option(
            help="Model name listed by /v1/models and put in responses "
            "(default: model.model_path).",
            show_default=False,
        ),
    ] = None,
    set_: SetOpt = None,
) -> None:
    """Serve the config's model over an OpenAI-compatible HTTP API until Ctrl-C.

    Routes: /v1/chat/completions, /v1/completions, /v1/models, /health. Responses
    carry token ids (prompt_token_ids, choices[].token_ids) like vLLM's.
    """
    try:
        cfg = load(config, set_, None)
    except user_errors() as exc:
        raise fail(exc) from None
    from reinforge.launcher.serve import build_server
    from reinforge.models.openai_api import server as openai_server

    prepare_runtime()

    try:  # before the model loads: a taken port fails at once
        sock = openai_server.bind_socket(host, port)
    except OSError as exc:
        raise fail(OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}")) from None
    try:
        server = build_server(cfg, api_key=api_key, served_model_name=served_model_name, host=host)
    except BaseException as exc:
        sock.close()
        if isinstance(exc, user_errors()):
            raise fail(exc) from None
        raise
    url = openai_server.socket_url(sock)
    if not api_key and not is_loopback(host):
        err.print(
            f"[yellow]warning:[/yellow] serving on {host} without --api-key: "
            "anyone who can reach this port can use the model",
            highlight=False,
        )
    typer.echo(f"serving {server.served_model_name} at {url}/v1 (health: {url}/health)")
    try:
        openai_server.run_server(server.app, sock=sock)
    finally:
        server.close()


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command()(serve)
