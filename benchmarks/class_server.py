"""What the class-server benchmark and its end-to-end test share: consecutive free ports for the proxy and its
workers, and each worker's state as HAProxy reports it (``scripts/serve_class.sh``'s stats socket)."""

from __future__ import annotations

import csv
import socket
from pathlib import Path


def free_ports(n: int) -> int:
    """The first of ``n`` consecutive localhost ports nothing listens on."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        socks = []
        try:
            for p in range(base, base + n):
                socks.append(socket.socket())
                socks[-1].bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} consecutive free ports")


def proxy_status(run_dir: Path) -> dict[str, str]:
    """Each worker's state as HAProxy sees it (``show stat`` on its socket): {"w1": "UP", "w2": "DOWN", …}."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(str(run_dir / "haproxy.sock"))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    rows = csv.DictReader(data.decode().lstrip("# ").splitlines())
    return {r["svname"]: r["status"] for r in rows if r["pxname"] == "workers" and r["svname"].startswith("w")}
