"""The viewer's web app: a JSON API over ``RunView`` and one static page.

``create_app(run_dir)`` builds the FastAPI app (tests drive it with TestClient);
``serve_viewer`` runs it with uvicorn on 127.0.0.1. The page (``static/``) is
plain HTML, CSS and JavaScript with no external files, so it works offline.

Endpoints (all GET, all JSON except ``/``):

* ``/api/run``: project, name, mode, model, buffer path, experience count
* ``/api/metrics``: the charts to draw and every numeric series of metrics.jsonl
* ``/api/steps``: explore steps and eval passes with counts
* ``/api/step/{n}``: step n's groups; filters ``taskset``, ``reward_min``,
  ``reward_max``, ``status``, ``termination``, ``masked`` (true/false)
* ``/api/experience/{id}``: one experience (``id``: its row id in the buffer)
* ``/api/tasks``: task records; ``status`` (comma-separated), ``taskset``, ``step``
* ``/api/compare``: ``task`` with optional ``a``, ``b`` steps and ``taskset``
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from reinforge.viewer.groups import Filters
from reinforge.viewer.run_view import NotFound, RunView

STATIC_DIR = Path(__file__).with_name("static")


def _not_found(exc: NotFound) -> HTTPException:
    return HTTPException(status_code=404, detail=str(exc))


def create_app(run_dir: Path) -> FastAPI:
    """The viewer app for one run directory (it must exist; its files may not yet)."""
    run_dir = Path(run_dir).expanduser()
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory {run_dir} does not exist")
    view = RunView(run_dir)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        view.close()

    app = FastAPI(title="reinforge viewer", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.view = view
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html")

    @app.get("/api/run")
    def run_summary() -> dict[str, Any]:
        return view.summary()

    @app.get("/api/metrics")
    def metrics() -> dict[str, Any]:
        return view.metrics()

    @app.get("/api/steps")
    def steps() -> dict[str, Any]:
        return view.steps()

    @app.get("/api/step/{step}")
    def step(
        step: int,
        taskset: str | None = None,
        reward_min: float | None = None,
        reward_max: float | None = None,
        status: str | None = None,
        termination: str | None = None,
        masked: bool | None = None,
    ) -> dict[str, Any]:
        filters = Filters(taskset, reward_min, reward_max, status, termination, masked)
        try:
            return view.step(step, filters)
        except NotFound as exc:
            raise _not_found(exc) from None

    @app.get("/api/experience/{row_id}")
    def experience(row_id: int) -> dict[str, Any]:
        try:
            return view.experience(row_id)
        except NotFound as exc:
            raise _not_found(exc) from None

    @app.get("/api/tasks")
    def tasks(
        status: str | None = Query(None, description="comma-separated, e.g. failed,timeout"),
        taskset: str | None = None,
        step: str | None = None,
        limit: int = Query(500, ge=0, le=100_000),
    ) -> dict[str, Any]:
        statuses = [s.strip() for s in status.split(",") if s.strip()] if status else None
        return view.tasks(statuses, taskset, step, limit)

    @app.get("/api/compare")
    def compare(
        task: str,
        a: str | None = None,
        b: str | None = None,
        taskset: str | None = None,
    ) -> dict[str, Any]:
        try:
            return view.compare(task, a, b, taskset)
        except NotFound as exc:
            raise _not_found(exc) from None

    return app


def serve_viewer(
    run_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8765,
    open_browser: bool = False,
) -> None:
    """Serve the viewer for ``run_dir`` until interrupted (Ctrl-C).

    It binds to 127.0.0.1 by default: the page shows prompts and responses of the
    run, which should not be reachable from other machines unless asked for.
    """
    import threading
    import webbrowser

    import uvicorn

    app = create_app(run_dir)
    url = f"http://{host}:{port}/"
    print(f"reinforge viewer for {run_dir} on {url} (Ctrl-C to stop)")
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=host, port=port, log_level="warning")
