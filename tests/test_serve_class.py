"""scripts/serve_class.sh's HAProxy configuration (issue 45, item 5): it passes ``haproxy -c``, pins a student to a
worker with a cookie the proxy inserts (never by IP: a class behind one NAT shares one address), health-checks every
worker on Streamlit's /_stcore/health, sends a dead worker's students elsewhere, keeps websockets open, and the
script refuses ports that collide. The end-to-end run (a worker killed under a browser) is
test_serve_class_browser.py. Needs HAProxy (scripts/install_browser.sh installs it); skipped without it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "serve_class.sh"

HAPROXY = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")     # not on every user's PATH
pytestmark = pytest.mark.skipif(HAPROXY is None,
                                reason="haproxy is not installed: run 'bash scripts/install_haproxy.sh'")


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> str:
    run_dir = tmp_path_factory.mktemp("serve_class")
    done = serve("--check", "--workers", "3", "--port", "18501", "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    assert path == run_dir / "haproxy.cfg"            # --check prints where the configuration lives
    check = subprocess.run([HAPROXY, "-c", "-f", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    return path.read_text()


def directives(text: str) -> list[str]:
    """The configuration's lines without comments and blank lines, spaces squeezed."""
    lines = (re.sub(r"\s+", " ", ln.split("#", 1)[0]).strip() for ln in text.splitlines())
    return [ln for ln in lines if ln]


def test_one_server_per_worker_with_its_cookie(config):
    servers = [ln for ln in directives(config) if ln.startswith("server ")]
    assert servers == [f"server w{k} 127.0.0.1:{18501 + k} cookie w{k}" for k in (1, 2, 3)]
    assert "bind 0.0.0.0:18501" in directives(config)


def test_affinity_by_an_inserted_cookie_never_by_ip(config):
    lines = directives(config)
    assert "cookie SERVERID insert indirect nocache httponly" in lines
    assert not any(ln.startswith("balance") and ("source" in ln or "hdr" in ln) for ln in lines)
    assert not any(ln.startswith(("hash-type", "stick")) for ln in lines)


def test_health_checks_take_a_dead_worker_out_and_its_students_go_elsewhere(config):
    lines = directives(config)
    assert "option httpchk GET /_stcore/health" in lines
    assert "http-check expect status 200" in lines
    default_server = next(ln for ln in lines if ln.startswith("default-server"))
    assert "check" in default_server.split() and "on-marked-down shutdown-sessions" in default_server
    assert "option redispatch 1" in lines and "retries 3" in lines


def test_websockets_stay_open(config):
    tunnel = next(ln for ln in directives(config) if ln.startswith("timeout tunnel"))
    assert tunnel == "timeout tunnel 2h"                  # a student's websocket lasts the whole visit


def test_bind_address_and_worker_ports_are_options(tmp_path):
    done = serve("--check", "--workers", "2", "--port", "9000", "--worker-port", "9100", "--bind", "127.0.0.1",
                 "--run-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = directives((tmp_path / "haproxy.cfg").read_text())
    assert "bind 127.0.0.1:9000" in lines
    assert [ln for ln in lines if ln.startswith("server ")] == [
        "server w1 127.0.0.1:9100 cookie w1", "server w2 127.0.0.1:9101 cookie w2"]


@pytest.mark.parametrize("args, says", [
    (("--workers", "0"), "--workers wants a whole number"),
    (("--port", "9001", "--worker-port", "9000", "--workers", "2"), "is one of the workers' ports"),
    (("--port", "http"), "--port wants a port number"),
    (("--threads", "2"), "unknown argument"),
])
def test_refuses_bad_arguments(tmp_path, args, says):
    done = serve("--check", "--run-dir", str(tmp_path), *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
