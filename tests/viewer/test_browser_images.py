"""The viewer shows a prompt's images: an explore run on the tiny VLM, in Chromium.

Takes the ``chromium`` fixture (tests/conftest.py): skipped without Debian's chromium
and the playwright package, failed under CI.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "multimodal" / "explore.yaml"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.usefixtures("tiny_vlm_path")
def test_prompt_images_are_shown(chromium: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    run_dir = tmp_path / "run"
    overrides = ["buffer.total_steps=1", "buffer.batch_size=2", "model.max_response_tokens=4"]
    args = ["explore", "-c", str(EXAMPLE), "--run-dir", str(run_dir)]
    result = CliRunner().invoke(app, args + [a for o in overrides for a in ("--set", o)])
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    port = _port()
    log = open(tmp_path / "viewer.log", "w+")  # noqa: SIM115 - read back on failure
    cmd = [sys.executable, "-m", "reinforge.cli.main", "view", str(run_dir), "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, log.read()
            try:
                if httpx.get(url + "api/run", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=ARGS)
            try:
                page = browser.new_page()
                page.goto(url)
                page.locator("tr.group-row").first.click()
                page.locator("tr.exp-row").first.click()
                image = page.locator("#detail .turn.user img.part-image")
                expect(image).to_have_count(1)
                expect(page.locator("#detail .turn.user")).to_contain_text("How many circles")
                assert image.evaluate("e => e.naturalWidth") == 64
            finally:
                browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
