"""A class on ``scripts/serve_class.sh`` (N Streamlit workers behind HAProxy), driven over Streamlit's websocket
protocol with bench_load's client, from one asyncio loop in this process (issue 45, item 4). Three runs:

(a) bench_load's busy protocol (its flow, 0.3–1.5 s between steps, 30 sessions) through the proxy at 1 and at 2
    workers: page updates per second, click-to-update p50/p95, and the ratio 2 ÷ 1.
(b) a realistic class: 60 sessions through the proxy to 2 workers, starts spread over 30 s, 5–20 s between clicks
    (seeded per session), each: open, a network, batch, precision, device, Layers, Estimates, one tab, Roofline.
    Target: p95 click-to-update ≤ 1 s, no error.
(c) (b) again, and mid-class the worker serving the most sessions is SIGKILLed (its ``worker-K.pid``). Sessions hold
    HAProxy's ``SERVERID`` cookie as a browser does (GET / first, then the websocket with the cookie). When a
    session's websocket closes it reconnects through the proxy at once with its old cookie (HAProxy redispatches and
    sets a new one) and opens a new session on its page with its link (the query string the app wrote, which every
    rerun carries, as the browser's does). Recovered: the first run there ends with no error box and the sidebar's
    network, batch, precision and device equal what the session had set; the time is counted from the kill. No
    session on the other worker may see an error.

Latency: from sending a change to the ``script_finished`` of the run it caused (recovery runs are not clicks and are
left out). Memory: the workers' RSS summed, and HAProxy's, every 0.25 s (pids from the run dir's pid files), peak.

Run: python benchmarks/bench_class.py [--quick]   (--quick: (a) 3 sessions, (b) and (c) 4 sessions, 1–2 s think)
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from bench_load import TABS, THINK_S, ProtocolSession, _cpu_s, _protocol_flow, _rss_mib, first_steps
from class_server import free_ports, proxy_status
from common import quick_main

ROOT = Path(__file__).resolve().parent.parent
HAPROXY = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
SIDEBAR = ("model", "batch_size", "dtype", "device")      # the settings a recovered session must get back
BACK_WITHIN_S = 10.0           # the promise: a killed worker's student is back on their page within this
GIVE_UP_S = 60.0               # a reconnecting session stops trying after this
SEED = 45
FULL = {"busy": 30, "class": 60, "think": (5.0, 20.0), "stagger": 30.0, "kill_at": 60.0}
QUICK = {"busy": 3, "class": 4, "think": (1.0, 2.0), "stagger": 2.0, "kill_at": 6.0}


def _pct(values: list[float], q: float) -> float | None:
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q / 100 * (len(v) - 1))))] if v else None


class ClassServer:
    """``serve_class.sh --workers K`` on free localhost ports in a run dir of its own, with an empty
    $CNN_CALC_HOME; memory sampled every 0.25 s; after ``watch(worker, pid)``, when that worker is UP again."""

    def __init__(self, workers: int, tmp: Path):
        self.workers, self.run_dir, base = workers, tmp / "run", free_ports(workers + 1)
        self.url = f"http://127.0.0.1:{base}"
        (tmp / "home").mkdir()
        self.log_path = tmp / "serve.log"
        env = {**os.environ, "CNN_CALC_PYTHON": sys.executable, "CNN_CALC_HOME": str(tmp / "home")}
        env.pop("CNN_CALC_LIVE", None)
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                ["bash", "scripts/serve_class.sh", "--workers", str(workers), "--port", str(base), "--bind",
                 "127.0.0.1", "--run-dir", str(self.run_dir)], cwd=ROOT, start_new_session=True, env=env,
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while not self._all_up():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"serve_class.sh --workers {workers} did not come up: "
                                   f"{self.log_path.read_text()[-500:]}")
            time.sleep(0.25)
        self.samples: list[tuple[float, float]] = []     # (workers' RSS summed, HAProxy's), MiB
        self.idle = self.rss()
        self.watched: tuple[str, int, float] | None = None
        self.back_up_s: float | None = None
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _all_up(self) -> bool:
        try:
            status = proxy_status(self.run_dir) if (self.run_dir / "haproxy.sock").exists() else {}
        except OSError:
            return False
        return len(status) == self.workers and set(status.values()) == {"UP"}

    def pid(self, name: str) -> int | None:
        try:
            return int((self.run_dir / f"{name}.pid").read_text())
        except (OSError, ValueError):
            return None

    def worker_pids(self) -> list[int]:
        return [p for k in range(1, self.workers + 1) if (p := self.pid(f"worker-{k}")) is not None]

    def rss(self) -> tuple[float, float]:
        return (sum(_rss_mib(p) or 0.0 for p in self.worker_pids()),
                _rss_mib(self.pid("haproxy") or -1) or 0.0)

    def cpu_s(self) -> float:
        return sum(_cpu_s(p) or 0.0 for p in self.worker_pids())

    def watch(self, worker: str, pid: int, t0: float) -> None:
        self.watched = (worker, pid, t0)

    def _sample(self) -> None:
        down_seen, tick = False, 0
        while not self._stop.wait(0.25):
            self.samples.append(self.rss())
            tick += 1
            if self.watched and self.back_up_s is None and tick % 2 == 0:
                worker, pid, t0 = self.watched
                try:
                    state = proxy_status(self.run_dir).get(worker, "")
                except OSError:
                    continue
                down_seen = down_seen or state != "UP"
                if down_seen and state == "UP" and self.pid(f"worker-{worker[1:]}") not in (pid, None):
                    self.back_up_s = time.perf_counter() - t0

    def peak(self) -> dict:
        w = [s[0] for s in self.samples] or [self.idle[0]]
        h = [s[1] for s in self.samples] or [self.idle[1]]
        t = [a + b for a, b in self.samples] or [sum(self.idle)]
        return {"idle_mib": sum(self.idle), "peak_mib": max(t), "workers_peak_mib": max(w), "haproxy_peak_mib": max(h)}

    def stop(self) -> None:
        if hasattr(self, "_stop"):
            self._stop.set()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)       # serve_class.sh stops its workers and HAProxy
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


# == sessions that hold a cookie and come back after their worker dies ===============================================

def _http_cookies(url: str, cookies: dict) -> dict:
    """GET / through the proxy as a browser opening the page: the cookies it sets (HAProxy's ``SERVERID``)."""
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}
    with urllib.request.urlopen(urllib.request.Request(url + "/", headers=headers), timeout=30) as r:
        r.read()
        got = {}
        for h in r.headers.get_all("Set-Cookie") or []:
            name, _, value = h.split(";", 1)[0].partition("=")
            got[name.strip()] = value.strip()
    return got


class _QueryWs:
    """The websocket as the browser's client uses it: every rerun carries the page's query string."""

    def __init__(self, conn, session: ClassSession):
        self.conn, self.session = conn, session

    async def send(self, data: bytes) -> None:
        msg = BackMsg()
        msg.ParseFromString(data)
        if msg.WhichOneof("type") == "rerun_script":
            msg.rerun_script.query_string = self.session.query
        await self.conn.send(msg.SerializeToString())

    async def close(self) -> None:
        await self.conn.close()


class _Gone(Exception):
    """A session that lost its worker and did not get back (the error is already counted)."""


class ClassSession(ProtocolSession):
    """bench_load's ``ProtocolSession`` with cookies, the app's query string, the sidebar's values as drawn, and a
    reconnect (``recovery``, a task started when the websocket closes under it)."""

    def __init__(self, url: str, n: int, run: dict):
        super().__init__(url, n, run["latencies"], [])       # own error list: counted by the worker it was on
        self.base, self.run = url, run
        self.cookies: dict[str, str] = {}
        self.worker: str | None = None
        self.query = ""                                        # the URL's query string, as the app last set it
        self.ran = self.shown = ""                             # the page the last run / last finished step showed
        self.values: dict[str, object] = {}                    # sidebar key → value drawn in the last run
        self.expected: dict[str, object] = {}                  # sidebar key → value this session set
        self.pending: dict[str, object] = {}                   # sent in a step that has not ended
        self.recovery: asyncio.Task | None = None
        self.recovered_s: float | None = None
        self.leaving = False

    async def open(self) -> None:
        self.cookies.update(await asyncio.to_thread(_http_cookies, self.base, self.cookies))
        self.worker = self.cookies.get("SERVERID")
        conn = await connect(self.ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=30,
                             ping_interval=None,
                             additional_headers={"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())})
        self.ws, self.closed, self.ran = _QueryWs(conn, self), False, ""
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws.conn:
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                self._handle(msg)
        except Exception:  # noqa: BLE001 — a closed connection: the finally block decides what it means
            pass
        finally:
            self.closed = True
            if not self.leaving and self.recovery is None:      # as the browser does: reconnect at once
                self.recovery = asyncio.create_task(self._recover())
            self.done.set()

    def _handle(self, msg) -> None:
        super()._handle(msg)
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.values = {}
        elif kind == "navigation":
            self.ran = msg.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            el = msg.delta.new_element
            t = el.WhichOneof("type")
            if t in ("selectbox", "number_input"):
                w = getattr(el, t)
                key = w.id.split("-", 2)[2] if w.id.startswith("$$ID-") else ""
                if key in SIDEBAR and t == "selectbox":
                    self.values[key] = w.raw_value if w.HasField("raw_value") else \
                        (w.options[w.default] if len(w.options) > w.default else None)
                elif key in SIDEBAR:
                    self.values[key] = w.value if w.HasField("value") else w.default

    async def _recover(self) -> bool:
        """Through the proxy with the old cookie (HAProxy picks a live worker and sets a new one), a new session on
        this page with the link: True once its first run ends clean with this session's settings."""
        lost, t0 = self.worker, time.perf_counter()
        if self.run["killed"] != lost:
            self.errors.append(f"session {self.n}: its connection to {lost} ended")
        while time.perf_counter() - t0 < GIVE_UP_S:
            try:
                await self.open()
                kept, self.kept = self.kept, {}                 # a fresh page: the link's settings only
                try:
                    ok = await self.step("reconnect", page=self.page[1])
                finally:
                    self.kept = kept
            except Exception:  # noqa: BLE001 — refused, 503 while HAProxy finds a live worker, closed: try again
                await asyncio.sleep(0.25)
                continue
            after = {**self.expected, **self.pending}        # a step cut short may or may not have been applied
            got = {k: self.values.get(k) for k in after}
            page = self.ran in (self.shown, self.pages.get(self.page[1]))      # the page before or after
            if ok and page and (got == after or all(got[k] == v for k, v in self.expected.items())):
                if self.run["killed"] == lost and self.run["kill_t"] is not None:
                    self.recovered_s = time.perf_counter() - self.run["kill_t"]
                return True
            self.errors.append(f"session {self.n}: back on {self.worker} on page {self.ran} with {got}, not "
                               f"{self.page[1]!r} with {self.expected}"[:300])
            return False
        self.errors.append(f"session {self.n}: not back within {GIVE_UP_S:.0f} s of losing {lost}")
        return False

    async def act(self, label: str, page: str | None = None, **values) -> bool:
        """A step as the student makes it; a step the connection's end cuts short is made again once back."""
        for _ in range(3):
            if self.recovery is not None:
                task = self.recovery
                if not await task:
                    raise _Gone()                          # _recover said why
                self.recovery = None
            self.pending = {k: (float(v) if k == "batch_size" else v) for k, v in values.items() if k in SIDEBAR}
            try:
                ok = await self.step(label, page, **values)
            except (ConnectionError, ConnectionClosed):
                for _ in range(200):                      # the reader sees the close and starts the recovery
                    if self.recovery is not None:
                        break
                    await asyncio.sleep(0.05)
                continue
            self.expected.update(self.pending)
            self.pending, self.shown = {}, self.ran
            return ok
        raise ConnectionError(f"{label}: cut short three times")


async def _class_flow(url: str, n: int, names: dict, run: dict, think: tuple, start_delay: float) -> None:
    """A student of a realistic class: 9 steps, ``think`` seconds (uniform, seeded per session) after each."""
    rng = random.Random(SEED * 1000 + n)
    s = ClassSession(url, n, run)
    run["sessions"].append(s)
    await asyncio.sleep(start_delay)

    async def step(label, page=None, **values):
        ok = await s.act(label, page, **values)
        await asyncio.sleep(rng.uniform(*think))
        return ok

    try:
        await s.open()
        await step("open the app", page="")
        if not await first_steps(s, step, n, names, s.errors):
            return
        await step("open Layers", page="layers")
        await step("open Estimates", page="Estimates")
        await step("an Estimates tab", estimates_tab=TABS[1 + n % (len(TABS) - 1)])
        await step("open Roofline", page="Roofline")
    except _Gone:
        pass
    except Exception as e:  # noqa: BLE001 — every failure is a counted error, the others go on
        s.errors.append(f"session {n}: {type(e).__name__}: {e}"[:300])
    finally:
        s.leaving = True
        if hasattr(s, "ws"):
            try:
                await s.close()
            except Exception:  # noqa: BLE001 — already closed
                pass


async def _kill_busiest(server: ClassServer, run: dict, at: float) -> None:
    """At ``at`` s: SIGKILL the worker the most open sessions are on (their ``SERVERID``)."""
    await asyncio.sleep(at)
    open_ = [s for s in run["sessions"] if s.worker and not s.closed and not s.leaving]
    counts = Counter(s.worker for s in open_)
    worker = max(sorted(counts), key=counts.get) if counts else "w1"
    pid = server.pid(f"worker-{worker[1:]}")
    run["at_kill"] = {s.n: s.worker for s in open_}
    run["killed"], run["kill_t"] = worker, time.perf_counter()
    os.kill(pid, signal.SIGKILL)
    server.watch(worker, pid, run["kill_t"])


# == the runs ========================================================================================================

def _names() -> dict:
    sys.path.insert(0, str(ROOT))
    from core.devices import load_devices
    return {i: d.name for i, d in load_devices(user_path=None).devices.items()}


def _stats(latencies: list, wall: float) -> dict:
    t = [s for _, label, s in latencies if label != "reconnect"]
    return {"steps": len(t), "wall_s": wall, "updates_per_s": len(t) / wall if wall > 0 else None,
            "p50_ms": _ms(_pct(t, 50)), "p95_ms": _ms(_pct(t, 95)), "max_ms": _ms(max(t, default=None))}


def _ms(s: float | None) -> float | None:
    return s * 1e3 if s is not None else None


def _busy(workers: int, sessions: int, names: dict) -> dict:
    """(a): bench_load's own flow, ``sessions`` at once, through the proxy to ``workers`` workers."""
    latencies: list = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cnn_calc_class_") as tmp:
        server = ClassServer(workers, Path(tmp))
        try:
            t0, cpu0 = time.perf_counter(), server.cpu_s()

            async def go():
                await asyncio.gather(*(_protocol_flow(server.url, i, names, latencies, errors, 0.05 * i)
                                       for i in range(sessions)))

            asyncio.run(go())
            wall, cpu = time.perf_counter() - t0, server.cpu_s() - cpu0
        finally:
            server.stop()
    return {"workers": workers, "sessions": sessions, "errors": errors, **_stats(latencies, wall),
            "server_cpu_s": cpu, **server.peak()}


def _class(sessions: int, names: dict, think: tuple, stagger: float, kill_at: float | None) -> dict:
    """(b), and with ``kill_at`` (c): a realistic class through the proxy to 2 workers."""
    run = {"latencies": [], "sessions": [], "killed": None, "kill_t": None, "at_kill": {}}
    with tempfile.TemporaryDirectory(prefix="cnn_calc_class_") as tmp:
        server = ClassServer(2, Path(tmp))
        try:
            t0 = time.perf_counter()

            async def go():
                jobs = [_class_flow(server.url, i, names, run, think, stagger * i / sessions)
                        for i in range(sessions)]
                if kill_at is not None:
                    jobs.append(_kill_busiest(server, run, kill_at))
                await asyncio.gather(*jobs)

            asyncio.run(go())
            wall = time.perf_counter() - t0
        finally:
            server.stop()
    ss = run["sessions"]
    out = {"workers": 2, "sessions": sessions, "think_s": list(think), "stagger_s": stagger,
           **_stats(run["latencies"], wall), **server.peak(),
           "per_worker": dict(sorted(Counter(s.cookies.get("SERVERID", "?") for s in ss).items())),
           "errors": [e for s in ss for e in s.errors]}
    if kill_at is not None:
        hit = {n for n, w in run["at_kill"].items() if w == run["killed"]}
        back_on = [s for s in ss if s.n in hit and s.recovered_s is not None]
        back = sorted(s.recovered_s for s in back_on)
        out["kill"] = {
            "at_s": kill_at, "worker": run["killed"], "sessions_on_it": len(hit), "open_sessions": len(run["at_kill"]),
            "recovered": len(back), "moved": sum(s.worker != run["killed"] for s in back_on),
            "restarted": sum(s.worker == run["killed"] for s in back_on),
            "within_10s": sum(t <= BACK_WITHIN_S for t in back),
            "recover_median_s": statistics.median(back) if back else None, "recover_max_s": max(back, default=None),
            "errors_killed_worker": [e for s in ss if s.n in hit for e in s.errors],
            "errors_other_worker": [e for s in ss if s.n not in hit for e in s.errors],
            "restarted_up_s": server.back_up_s}
    return out


def measure(quick: bool = False) -> dict:
    if HAPROXY is None:
        raise RuntimeError("haproxy is not installed: run 'bash scripts/install_haproxy.sh'")
    cfg, names = (QUICK if quick else FULL), _names()
    one = _busy(1, cfg["busy"], names)
    two = _busy(2, cfg["busy"], names)
    ratio = {k: two[k] / one[k] if one[k] and two[k] else None for k in ("updates_per_s", "p50_ms", "p95_ms")}
    b = _class(cfg["class"], names, cfg["think"], cfg["stagger"], None)
    c = _class(cfg["class"], names, cfg["think"], cfg["stagger"], cfg["kill_at"])
    return {"quick": quick, "cores": os.cpu_count(), "a": {"1": one, "2": two, "ratio": ratio}, "b": b, "c": c}


# == the report ======================================================================================================

def _f(x, fmt: str = ",.0f", unit: str = "") -> str:
    return f"{x:{fmt}}{unit}" if isinstance(x, (int, float)) and math.isfinite(x) else "—"


def _mem(r: dict) -> str:
    return (f"{_f(r['peak_mib'])} MiB ({_f(r['workers_peak_mib'])} workers + {_f(r['haproxy_peak_mib'], '.0f')} "
            f"HAProxy; {_f(r['idle_mib'])} MiB idle)")


def markdown(out: dict) -> str:
    a1, a2, ra, b, c = out["a"]["1"], out["a"]["2"], out["a"]["ratio"], out["b"], out["c"]
    k = c["kill"]
    lines = ["## A class on serve_class.sh (workers behind HAProxy)", "",
             f"`scripts/serve_class.sh` on localhost ({out['cores']} cores, shared with the clients: one asyncio "
             "loop speaking Streamlit's websocket protocol, bench_load's client). Click-to-update: from the change "
             "sent to the end of the script run it caused. Memory: workers' RSS summed plus HAProxy's, sampled "
             "every 0.25 s.", "",
             f"### (a) Busy protocol, 1 vs 2 workers ({a1['sessions']} sessions, bench_load's flow, "
             f"{THINK_S[0]:g}–{THINK_S[1]:g} s between steps)", "",
             "| workers | steps | errors | updates/s | p50 ms | p95 ms | workers' CPU s | peak memory |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in (a1, a2):
        lines.append(f"| {r['workers']} | {r['steps']} | {len(r['errors'])} | {_f(r['updates_per_s'], '.1f')} | "
                     f"{_f(r['p50_ms'])} | {_f(r['p95_ms'])} | {_f(r['server_cpu_s'])} | {_mem(r)} |")
    lines += [f"| 2 ÷ 1 | | | {_f(ra['updates_per_s'], '.2f')}× | {_f(ra['p50_ms'], '.2f')}× | "
              f"{_f(ra['p95_ms'], '.2f')}× | | |", "",
              f"### (b) A class: {b['sessions']} sessions, 2 workers, {b['think_s'][0]:g}–{b['think_s'][1]:g} s "
              f"between clicks, starts over {b['stagger_s']:g} s", "",
              "| | |", "|---|---:|",
              f"| steps / errors | {b['steps']} / {len(b['errors'])} |",
              f"| click-to-update p50 / p95 / max | {_f(b['p50_ms'])} / {_f(b['p95_ms'])} / {_f(b['max_ms'])} ms |",
              f"| target: p95 ≤ 1,000 ms and no error | "
              f"{'met' if (b['p95_ms'] or 1e9) <= 1000 and not b['errors'] else 'not met'} |",
              f"| page updates per second | {_f(b['updates_per_s'], '.2f')} |",
              f"| sessions per worker (SERVERID cookie) | "
              f"{', '.join(f'{w}: {n}' for w, n in b['per_worker'].items())} |",
              f"| peak memory | {_mem(b)} |", "",
              f"### (c) The same class, the busiest worker SIGKILLed at {k['at_s']:g} s", "",
              "| | |", "|---|---:|",
              f"| worker killed / sessions on it (of {k['open_sessions']} open) | {k['worker']} / "
              f"{k['sessions_on_it']} |",
              f"| back on their page with their settings: all / within {BACK_WITHIN_S:g} s | {k['recovered']} / "
              f"{k['within_10s']} of {k['sessions_on_it']} |",
              f"| … now on the other worker / on {k['worker']} restarted (HAProxy's choice) | {k['moved']} / "
              f"{k['restarted']} |",
              f"| time to recover from the kill: median / max | {_f(k['recover_median_s'], '.2f')} / "
              f"{_f(k['recover_max_s'], '.2f')} s |",
              f"| errors: sessions on the killed worker / on the other | {len(k['errors_killed_worker'])} / "
              f"{len(k['errors_other_worker'])} |",
              f"| click-to-update p50 / p95 / max (reconnects left out) | {_f(c['p50_ms'])} / {_f(c['p95_ms'])} / "
              f"{_f(c['max_ms'])} ms |",
              f"| steps / page updates per second | {c['steps']} / {_f(c['updates_per_s'], '.2f')} |",
              f"| killed worker restarted and UP in HAProxy again after | {_f(k['restarted_up_s'], '.1f', ' s')} |",
              f"| peak memory | {_mem(c)} |"]
    errors = [("(a) 1 worker", a1["errors"]), ("(a) 2 workers", a2["errors"]), ("(b)", b["errors"]),
              ("(c)", c["errors"])]
    for name, errs in errors:
        if errs:
            lines += ["", f"Errors {name}:", *(f"- {e}" for e in errs[:10])]
    lines += ["", "A killed worker's session reconnects through the proxy at once with its old cookie (HAProxy "
              "redispatches to a live worker and sets a new one) and opens its page with its link; recovered means "
              "that run ended with no error box and the sidebar's network, batch, precision and device as the "
              "session had set them."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    return quick_main(measure, markdown, argv, "(a) 3 sessions, (b)/(c) 4 sessions with 1–2 s think (smoke test)")


if __name__ == "__main__":
    main()
