"""The viewer page in a real headless Chromium, driven by Playwright.

Needs Debian's ``chromium`` (``apt-get install chromium``) and the ``playwright``
package from PyPI; Playwright's own browser download is never used (it is launched
with ``executable_path``). The ``chromium`` fixture (tests/conftest.py) skips the test
without them, and fails it under CI: a broken install step must not pass as green.

The server is started as a user starts it: ``serve_viewer`` in a separate process
on a free port. Set ``REINFORGE_UPDATE_SCREENSHOT=1`` to also copy the screenshot
to docs/viewer.png.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.browser

DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "viewer.png"
# The flags the machine notes ask for: no sandbox as root, and no background
# connections (this machine's network is closed; Chromium would retry them).
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server(sample_run: Any, tmp_path: Path) -> Iterator[str]:
    """``reinforge view`` on the sample run in its own process; yields its URL."""
    port = _free_port()
    log = open(tmp_path / "server.log", "w+")  # noqa: SIM115 - read back on failure
    proc = subprocess.Popen(
        # the real command a user runs: reinforge view RUN_DIR --port PORT
        [
            sys.executable,
            "-m",
            "reinforge.cli.main",
            "view",
            str(sample_run.run_dir),
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"the viewer did not start (exit {proc.poll()}): {log.read()[-3000:]}")
            try:
                if httpx.get(url + "api/run", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


GREEN, RED = (27, 158, 90), (179, 38, 30)  # the page's advantage colours


def token_colour(page: Any, server: str, exp_id: str) -> tuple[float, ...]:
    """Show experience ``exp_id``, still coloured by advantage (the colouring chosen
    for an earlier experience is kept); its first sampled token's computed background
    is green (positive) or red (negative), as deep as the advantage is against the
    largest |advantage| of the experience (0.75 at most). Returns the colour's red,
    green and blue."""
    from playwright.sync_api import expect

    exp = httpx.get(f"{server}api/experience/{exp_id}").json()
    page.click(f"tr.exp-row[data-id='{exp_id}']")
    expect(page.locator("#detail h2")).to_have_text(f"Experience {exp['uid']}")
    expect(page.locator("#token-key")).to_have_value("advantage")
    tokens = exp["tokens"]
    advantages = tokens["advantages"]
    i = next(
        i for i, (m, a) in enumerate(zip(tokens["action_mask"], advantages, strict=True)) if m and a
    )
    colour = (
        page.locator("#tokens .tok").nth(i).evaluate("e => getComputedStyle(e).backgroundColor")
    )
    *rgb, alpha = (float(v) for v in colour.removeprefix("rgba(").removesuffix(")").split(","))
    assert tuple(rgb) == (GREEN if advantages[i] > 0 else RED), (exp_id, advantages[i], colour)
    scale = max(abs(a or 0) for a in advantages)
    assert alpha == pytest.approx(0.75 * abs(advantages[i]) / scale, abs=0.01), colour
    return tuple(rgb)


def test_browse_a_run(chromium: str, server: str, sample_run: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 900})
            page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
            page.on(
                "console",
                lambda msg: (
                    problems.append(f"console: {msg.text}") if msg.type == "error" else None
                ),
            )
            page.goto(server)

            # header, curves with integer step ticks, steps
            expect(page.locator("#run-title")).to_have_text("viewer / calc-agent")
            expect(page.locator("#curves .chart")).to_have_count(2)
            eval_chart = page.locator("#curves .chart").nth(1)
            expect(eval_chart.locator("h3")).to_have_text("Eval accuracy per taskset")
            ticks = eval_chart.locator("svg text").all_text_contents()
            assert {"0", "2", "4", "step", "value"} <= set(ticks), ticks
            expect(page.locator("#steps-table tbody tr")).to_have_count(4)

            # step 1 is selected: its four groups
            groups = page.locator("tr.group-row")
            expect(groups).to_have_count(sample_run.groups_per_step)
            expect(page.locator("#groups-title")).to_have_text("Groups of step 1")

            # open task 0's group, then its first experience
            groups.first.click()
            rows = page.locator("tr.exp-row")
            expect(rows).to_have_count(sample_run.repeat_times)
            # the weight version that sampled each experience and each step (explore: 0)
            expect(rows.first.locator("td.version")).to_have_text("0")
            expect(page.locator("#steps-table tbody tr td.version").first).to_have_text("0")
            rows.first.click()
            detail = page.locator("#detail")
            expect(detail.locator(".turn.user pre")).to_have_text(sample_run.first_prompt)
            expect(detail.locator(".turn.tool")).to_have_count(1)
            expect(detail.locator(".tool-call")).to_contain_text("calculate(")
            expect(detail.locator(".turn.assistant")).to_have_count(2)
            exp_id = rows.first.get_attribute("data-id")
            n_tokens = len(httpx.get(f"{server}api/experience/{exp_id}").json()["tokens"]["ids"])
            expect(detail.locator("#tokens .tok")).to_have_count(n_tokens)
            page.select_option("#token-key", "advantage")
            expect(detail).to_contain_text("full colour = |advantage|")
            detail.scroll_into_view_if_needed()
            shot = tmp_path / "viewer.png"
            page.screenshot(path=str(shot), full_page=True)

            # a token's colour says its advantage: green when positive, red when negative
            seen = {token_colour(page, server, row.get_attribute("data-id")) for row in rows.all()}
            assert seen == {GREEN, RED}  # task 0's group has rewards 1, 1 and 0

            # filters: only the groups with a reward of 1
            page.fill("#filters input[name=reward_min]", "1")
            page.click("#filters button[type=submit]")
            wanted = httpx.get(f"{server}api/step/1", params={"reward_min": 1}).json()
            expect(groups).to_have_count(len(wanted["groups"]))

            # step 2 holds the failed and the masked task
            page.fill("#filters input[name=reward_min]", "")
            page.click("#steps-table tbody tr[data-step='2']")
            expect(page.locator("#groups-title")).to_have_text("Groups of step 2")
            failed = page.locator(f"tr.group-row[data-task='{sample_run.failing_task}']")
            expect(failed).to_contain_text("exploded on purpose")
            expect(failed.locator("td.status-failed")).to_have_text("failed")
            masked = page.locator(f"tr.group-row[data-task='{sample_run.masked_task}']")
            expect(masked.locator("td.status-masked")).to_have_text("masked")

            # the failed / masked tab: 5 failed and 5 masked records (steps 2, 4; 3 evals)
            page.click("button[data-tab=failed]")
            expect(page.locator("tr.task-row")).to_have_count(10)
            page.locator("tr.task-row").first.click()
            expect(page.locator("#tab-failed pre").first).to_contain_text("RuntimeError")

            # compare task 0 at its first and last step
            page.click("button[data-tab=steps]")
            page.click("#steps-table tbody tr[data-step='1']")
            groups.first.locator("button").click()
            sides = page.locator("#compare-sides .side")
            expect(sides).to_have_count(2)
            expect(sides.nth(0).locator("h3")).to_have_text("step 1")
            expect(sides.nth(1).locator("h3")).to_have_text("step 3")
            expect(sides.nth(1).locator("tr.exp-row")).to_have_count(sample_run.repeat_times)
            page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
        finally:
            browser.close()
    assert not problems, problems
    assert shot.stat().st_size > 10_000
    if os.environ.get("REINFORGE_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, DOCS_SCREENSHOT)
