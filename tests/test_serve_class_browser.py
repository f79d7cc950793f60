"""A class served by scripts/serve_class.sh loses no student when a worker dies (issue 45, items 3 and 5): two workers
in server mode with one cookie secret behind HAProxy, Chromium opens a link, the worker its cookie names is killed,
the browser's Streamlit client reconnects through the proxy to the other worker (the proxy re-inserts its cookie),
the page comes back with the same network, batch and device and the same figures within 10 s, an upload works there
(the XSRF cookie the first worker issued is accepted), the supervisor restarts the dead worker until HAProxy's health
check passes again, and SIGTERM stops everything. Needs HAProxy and Chromium (scripts/install_browser.sh); skipped
without HAProxy.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

import core
from browser_ref import ROOT, launch, metric

sys.path.insert(0, str(ROOT / "benchmarks"))
from class_server import free_ports, proxy_status

HAPROXY = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")     # not on every user's PATH
pytestmark = pytest.mark.skipif(HAPROXY is None,
                                reason="haproxy is not installed: run 'bash scripts/install_haproxy.sh'")
LINK = "/Estimates?model=resnet50&batch=64&device=a100-40gb-sxm"
BACK_WITHIN_S = 10


def wait_for(what: str, ok, timeout: float, step: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = ok()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(step)
    pytest.fail(f"{what}: not within {timeout:.0f} s")


@pytest.fixture
def served(tmp_path):
    """``serve_class.sh --workers 2`` on free ports: (the students' URL, its run dir, the script's process)."""
    base = free_ports(3)
    run_dir = tmp_path / "run"
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen(["bash", "scripts/serve_class.sh", "--workers", "2", "--port", str(base), "--bind",
                             "127.0.0.1", "--run-dir", str(run_dir)], cwd=ROOT, start_new_session=True,
                            env={**os.environ, "CNN_CALC_PYTHON": sys.executable}, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        wait_for("both workers up behind HAProxy",
                 lambda: (run_dir / "haproxy.sock").exists() and set(proxy_status(run_dir).values()) == {"UP"}, 90)
        yield f"http://127.0.0.1:{base}", run_dir, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)         # the test failed before its own SIGTERM: leave nothing behind
            proc.wait()
        log.close()
        print((tmp_path / "serve.log").read_text())


def environment(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
    return dict(p.split("=", 1) for p in pairs if "=" in p)


def test_a_killed_worker_loses_no_student(served, tmp_path):
    url, run_dir, proc = served
    # every worker is in server mode and shares one cookie secret, which no command line shows
    workers = [int((run_dir / f"worker-{k}.pid").read_text()) for k in (1, 2)]
    envs = [environment(pid) for pid in workers]
    assert [e.get("CNN_CALC_SERVER") for e in envs] == ["1", "1"]
    secret = envs[0]["STREAMLIT_SERVER_COOKIE_SECRET"]
    assert len(secret) == 64 and envs[1]["STREAMLIT_SERVER_COOKIE_SECRET"] == secret
    assert all(secret not in Path(f"/proc/{pid}/cmdline").read_text() for pid in workers)
    net = core.load_network("mnist_cnn").to_dict()
    upload = tmp_path / "student_net.json"
    upload.write_text(json.dumps({**net, "name": "student_net"}))
    refused = []
    with sync_playwright() as p:
        browser = launch(p)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.on("response", lambda r: refused.append(r.url) if r.status == 403 else None)

        def worker() -> str | None:
            return {c["name"]: c["value"] for c in context.cookies()}.get("SERVERID")

        sidebar = page.locator("[data-testid='stSidebar']")

        def view() -> tuple[str, str, str, str]:
            return (metric(page, "Forward"), sidebar.locator("input[type='number']").first.input_value(),
                    sidebar.get_by_role("combobox", name="Network").input_value(),
                    sidebar.get_by_role("combobox", name="Device").input_value())

        page.goto(url + LINK, wait_until="networkidle")
        expect(page.locator("[data-testid='stMetric']").filter(has_text="Forward").first).to_be_visible(timeout=60000)
        page.wait_for_timeout(1000)
        before, first = view(), worker()
        assert before[1] == "64" and "resnet50" in before[2] and "A100" in before[3], before
        assert first in ("w1", "w2")
        killed = int((run_dir / f"worker-{first[1:]}.pid").read_text())

        os.kill(killed, signal.SIGKILL)
        t0 = time.monotonic()
        # Streamlit's client sees its websocket close and reconnects; HAProxy sends it to the live worker
        wait_for("the browser reconnected to the other worker", lambda: worker() not in (first, None), BACK_WITHIN_S)
        reconnected = time.monotonic() - t0
        page.reload(wait_until="domcontentloaded")       # the link in the address bar, on the other worker
        expect(page.locator("[data-testid='stMetric']").filter(has_text="Forward").first) \
            .to_have_text(f"Forward{before[0]}", timeout=1000 * (BACK_WITHIN_S - reconnected))
        back = time.monotonic() - t0
        assert back <= BACK_WITHIN_S
        assert view() == before                          # same network, batch, device and figures
        second = worker()
        assert second not in (first, None) and page.url.endswith(LINK)

        # an upload on the other worker: the XSRF cookie from the first worker still holds
        sidebar.locator("[data-testid='stSidebarNav'] a", has_text="Network").click()
        page.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(str(upload))
        expect(page.get_by_role("button", name="Use student_net")).to_be_visible(timeout=30000)
        assert refused == [] and worker() == second
        browser.close()

    # the supervisor restarts the dead worker; HAProxy's health check takes it back
    wait_for("the killed worker restarted",
             lambda: int((run_dir / f"worker-{first[1:]}.pid").read_text()) != killed, 30)
    wait_for("HAProxy sees the restarted worker up", lambda: proxy_status(run_dir).get(first) == "UP", 60)
    again = environment(int((run_dir / f"worker-{first[1:]}.pid").read_text()))
    assert again["CNN_CALC_SERVER"] == "1" and again["STREAMLIT_SERVER_COOKIE_SECRET"] == secret
    up = time.monotonic() - t0
    print(f"reconnected {reconnected:.1f} s, page back {back:.1f} s, restarted worker up {up:.1f} s after the kill")

    pids = [int((run_dir / f).read_text()) for f in ("worker-1.pid", "worker-2.pid", "haproxy.pid")]
    proc.send_signal(signal.SIGTERM)                     # what Ctrl-C does: everything stops
    assert proc.wait(timeout=30) == 0
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
