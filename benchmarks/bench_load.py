"""Classroom load: the app served in classroom server mode (``CNN_CALC_SERVER=1``) on localhost, driven by 30
concurrent sessions through the main flows; errors, widget-to-update latency (p50/p95) and the server's memory (RSS).

Most sessions speak Streamlit's websocket protocol, as the browser does (``BackMsg`` protobufs up: a rerun with the
changed widget's value; ``ForwardMsg`` down: the page's elements, then ``script_finished``), from one asyncio loop in
this process, so the figure is the server's and not that of 30 browsers on a small machine. A few sessions are real
headless Chromium (Debian's /usr/bin/chromium, driven by Playwright) clicking through the same flow. Each session, with
a pause of 0.3–1.5 s between steps as a student would make: open the app, pick a network, change the batch, the
precision and the device, Layers, the five Estimates tabs, Roofline, then the Devices page where it adds a device of
its own and picks it in the sidebar.

Latency: from sending the change (protocol) or from the click (browser) to the end of the script run it caused (the
``script_finished`` message; in the browser, the app's script state back to "notRunning"). Errors: a failed or timed
out step, a red exception or error box, or a device of another session in this session's list (they must be
independent). RSS: the server process's resident memory, sampled every 0.25 s, and its own peak (VmHWM). The shared
cache (ui/shared_cache.py): its hit rate, entries and approximate size, which the server writes to a file outside its
home ($CNN_CALC_CACHE_STATS) after each lookup. The user home the server is given ($CNN_CALC_HOME) must still be empty
at the end.

Run: python benchmarks/bench_load.py [--quick]   (--quick: 3 protocol sessions, no browser)
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState, WidgetStates
from websockets.asyncio.client import connect

from common import quick_main

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-quic", "--disable-component-update", "--disable-sync"]
NETWORKS = ("resnet50", "vgg16", "mobilenet_v2", "densenet121", "efficientnet_b0", "resnet18")
# (precision, a device that has it): neither the sidebar's default (fp32, V100), so that a browser's choice is a change
SETUPS = (("bf16", "a100-40gb-sxm"), ("fp16", "p100-sxm2"), ("fp64", "k80"))
TABS = ("Breakdown", "Batch size", "Other devices", "Convolution algorithm", "Data parallel")
BATCHES = (8, 32, 64, 128)
THINK_S = (0.3, 1.5)
STEP_TIMEOUT_S = 180.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Server:
    """``streamlit run app.py`` in server mode on a free localhost port, with an empty $CNN_CALC_HOME; RSS sampled."""

    def __init__(self, home: Path, cache_stats: Path | None = None):
        self.home, self.port, self.cache_stats = home, _free_port(), cache_stats
        env = {**os.environ, "CNN_CALC_SERVER": "1", "CNN_CALC_HOME": str(home)}
        if cache_stats is not None:
            env["CNN_CALC_CACHE_STATS"] = str(cache_stats)
        env.pop("CNN_CALC_LIVE", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
             str(self.port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none", "--server.runOnSave", "false"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{self.port}"
        self.samples: list[float] = []
        self._stop = threading.Event()
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2)
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited: {self.proc.stderr.read()[-500:]}") from None
                time.sleep(0.3)
        else:
            self.stop()
            raise RuntimeError("the Streamlit server did not start within 90 s")
        self.idle_mib = _rss_mib(self.proc.pid)
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.25):
            if (mib := _rss_mib(self.proc.pid)) is not None:
                self.samples.append(mib)

    def rss(self) -> float | None:
        return _rss_mib(self.proc.pid)

    def cache(self) -> dict | None:
        """The server's last shared-cache figures (``ui.shared_cache.stats``), or None before its first lookup."""
        try:
            return json.loads(self.cache_stats.read_text()) if self.cache_stats is not None else None
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        self._stop.set()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# == sessions over the websocket protocol ============================================================================

def _walk_ids(msg, found: dict, options: dict) -> None:
    """Every widget id in an element or block proto, by its user key (ids read ``$$ID-<hash>-<key>``); a select
    box's option labels by key."""
    for field, value in msg.ListFields():
        if field.name == "id" and isinstance(value, str) and value.startswith("$$ID-"):
            key = value.split("-", 2)[2]
            found[key] = value
            if "options" in msg.DESCRIPTOR.fields_by_name:
                options[key] = list(msg.options)
        elif hasattr(value, "ListFields"):              # a nested message (not a repeated or map field)
            _walk_ids(value, found, options)


class ProtocolSession:
    """One session over ``/_stcore/stream``: ``step`` sends a rerun with widget values and waits for its end."""

    def __init__(self, url: str, n: int, latencies: list, errors: list):
        self.ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.n, self.latencies, self.errors = n, latencies, errors
        self.ids: dict[str, str] = {}          # user key → widget id, from the last run
        self.options: dict[str, list] = {}     # user key → a select box's option labels
        self.pages: dict[str, str] = {}        # url path → page script hash
        self.page = ("", "")                   # (hash, url path) of the page shown
        self.kept: dict[str, object] = {}      # user key → WidgetState sent (persistent values, as the browser keeps)
        self.alerts: list[tuple[int, str]] = []
        self.exceptions: list[str] = []
        self.done = asyncio.Event()
        self.closed = False

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                self._handle(msg)
        except Exception as e:  # noqa: BLE001 — a closed connection or a message this reader cannot take
            self.errors.append(f"session {self.n}: the connection ended ({type(e).__name__}: {e})"[:300])
        finally:
            self.closed = True
            self.done.set()

    def _handle(self, msg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.ids, self.options, self.alerts, self.exceptions = {}, {}, [], []
        elif kind == "navigation":
            self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
        elif kind == "delta":
            d = msg.delta
            which = d.WhichOneof("type")
            if which == "new_element":
                el = d.new_element
                t = el.WhichOneof("type")
                if t == "exception":
                    self.exceptions.append(f"{el.exception.type}: {el.exception.message}"[:200])
                elif t == "alert":
                    self.alerts.append((el.alert.format, el.alert.body))
                _walk_ids(el, self.ids, self.options)
            elif which == "add_block":
                _walk_ids(d.add_block, self.ids, self.options)
        elif kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            self.done.set()

    async def open(self) -> None:
        self.ws = await connect(self.ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=120,
                                ping_interval=None)
        self.reader = asyncio.create_task(self._read())

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()

    def _state(self, key: str, value):
        w = WidgetState(id=self.ids[key])
        if value is True:
            w.trigger_value = True
        elif isinstance(value, str):
            w.string_value = value
        else:
            w.double_value = float(value)
        return w

    async def step(self, label: str, page: str | None = None, **values) -> bool:
        """Set widgets (by key; ``True`` clicks a button) or open a page (its url path), wait for the run to end;
        False (an error recorded) on a missing widget, a time-out, or an exception or error box."""
        try:
            sent = {k: self._state(k, v) for k, v in values.items()}
        except KeyError as e:
            self.errors.append(f"session {self.n}, {label}: no widget {e} on the page")
            return False
        self.kept.update({k: w for k, w in sent.items() if not w.HasField("trigger_value")})
        if page is not None:
            self.page = (self.pages.get(page, ""), page)
        states = WidgetStates(widgets=[w for k, w in {**self.kept, **sent}.items() if self.ids.get(k) == w.id])
        msg = BackMsg()
        msg.rerun_script.widget_states.CopyFrom(states)
        msg.rerun_script.page_script_hash, msg.rerun_script.page_name = self.page
        self.done.clear()
        t = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        try:
            await asyncio.wait_for(self.done.wait(), STEP_TIMEOUT_S)
        except asyncio.TimeoutError:
            self.errors.append(f"session {self.n}, {label}: no update within {STEP_TIMEOUT_S:.0f} s")
            return False
        if self.closed:
            raise ConnectionError(f"{label}: the server closed the connection")
        self.latencies.append(("protocol", label, time.perf_counter() - t))
        bad = self.exceptions + [body[:200] for fmt, body in self.alerts if fmt == 1]
        for b in bad:
            self.errors.append(f"session {self.n}, {label}: {b}")
        return not bad


async def first_steps(s, step, n: int, names: dict, errors: list) -> bool:
    """A student's first steps after opening the app: a network, a batch, a precision and a device of their own
    (by session number); False (an error recorded) when the network is not in the list."""
    net = NETWORKS[n % len(NETWORKS)]
    label = next((o for o in s.options.get("model", []) if o.endswith(f" · {net}")), None)
    if label is None:
        errors.append(f"session {n}: {net} is not in the Network list")
        return False
    await step("pick a network", model=label)
    await step("change the batch", batch_size=BATCHES[n % len(BATCHES)])
    dtype, device = SETUPS[n % len(SETUPS)]
    await step("change the precision", dtype=dtype)
    await step("change the device", device=names[device])
    return True


async def _protocol_flow(url: str, n: int, names: dict, latencies: list, errors: list, start_delay: float) -> None:
    rng = random.Random(n)
    s = ProtocolSession(url, n, latencies, errors)
    await asyncio.sleep(start_delay)

    async def step(label, page=None, **values):
        ok = await s.step(label, page, **values)
        await asyncio.sleep(rng.uniform(*THINK_S))
        return ok

    try:
        await s.open()
        await step("open the app", page="")
        if not await first_steps(s, step, n, names, errors):
            return
        await step("open Layers", page="layers")
        await step("open Estimates", page="Estimates")
        for tab in TABS[1:]:
            await step("an Estimates tab", estimates_tab=tab)
        await step("open Roofline", page="Roofline")
        await step("open Devices", page="Devices")
        mine = f"Class GPU {n}"
        ok = await step("add a device", dev_id=f"class-gpu-{n}", dev_name=mine, dev_vendor="Class",
                        dev_fp32=10.0 + n, dev_bandwidth=500.0, dev_source="measured in class", device_save=True)
        if ok and not any(fmt == 4 and f"class-gpu-{n}" in body for fmt, body in s.alerts):
            errors.append(f"session {n}, add a device: no 'Saved' message")
        listed = s.options.get("device", [])
        others = [o for o in listed if o.startswith("Class GPU ") and o != mine]
        if others:
            errors.append(f"session {n}: sees other sessions' devices: {', '.join(others[:3])}")
        if mine not in listed:
            errors.append(f"session {n}: its own device is not in the sidebar")
            return
        await step("pick own device", device=mine)
        await step("open Layers", page="layers")
    except Exception as e:  # noqa: BLE001 — every failure is a counted error, the others go on
        errors.append(f"session {n}: {type(e).__name__}: {e}"[:300])
    finally:
        if hasattr(s, "ws"):
            await s.close()


# == sessions in a real browser =======================================================================================

def _browser_session(url: str, n: int, names: dict, latencies: list, errors: list) -> None:
    """A browser session's thread: whatever stops it is a counted error."""
    try:
        _browser_flow(url, n, names, latencies, errors)
    except Exception as e:  # noqa: BLE001
        errors.append(f"browser {n}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")


def _browser_flow(url: str, n: int, names: dict, latencies: list, errors: list) -> None:
    from playwright.sync_api import sync_playwright  # imported once by measure() before the threads start

    rng = random.Random(1000 + n)
    finished = [0]                       # script runs ended, read from the page's own websocket frames

    def on_frame(payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            msg = ForwardMsg()
            try:
                msg.ParseFromString(bytes(payload))
            except Exception:  # noqa: BLE001 — not a ForwardMsg: not ours to count
                return
            if msg.WhichOneof("type") == "script_finished" and \
                    msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                finished[0] += 1

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("websocket", lambda ws: ws.on("framereceived", on_frame))

        def settle(label: str, action) -> None:
            """Do ``action`` and wait for the script run it causes to end (the same ``script_finished`` the protocol
            sessions wait for, seen in the browser's websocket)."""
            before, t = finished[0], time.perf_counter()
            action()
            while finished[0] == before:
                if time.perf_counter() - t > STEP_TIMEOUT_S:
                    raise TimeoutError(f"{label}: no update within {STEP_TIMEOUT_S:.0f} s")
                page.wait_for_timeout(10)
            latencies.append(("browser", label, time.perf_counter() - t))
            bad = page.locator("[data-testid='stException']").count()
            if bad:
                errors.append(f"browser {n}, {label}: {bad} exception box(es)")
            page.wait_for_timeout(rng.uniform(*THINK_S) * 1000)

        def choose(label_text: str, typed: str) -> None:
            box = page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").filter(has_text=label_text)
            box.first.click()
            page.keyboard.type(typed)
            page.keyboard.press("Enter")

        def nav(title: str) -> None:
            page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()

        def number(where, value) -> None:
            where.fill(str(value))
            where.press("Enter")

        try:
            settle("open the app", lambda: page.goto(url, wait_until="commit"))
            page.locator("[data-testid='stMetric']").first.wait_for(timeout=STEP_TIMEOUT_S * 1000)
            settle("pick a network", lambda: choose("Network", NETWORKS[n % len(NETWORKS)]))
            batch = page.locator("[data-testid='stSidebar'] input[type='number']").first
            settle("change the batch", lambda: number(batch, BATCHES[n % len(BATCHES)]))
            dtype, device = SETUPS[n % len(SETUPS)]
            settle("change the precision", lambda: choose("Precision", dtype))
            settle("change the device", lambda: choose("Device", names[device]))
            settle("open Estimates", lambda: nav("Estimates"))
            for tab in TABS[1:]:
                settle("an Estimates tab", lambda tab=tab: page.get_by_role("tab", name=tab).click())
            settle("open Roofline", lambda: nav("Roofline"))
            settle("open Devices", lambda: nav("Devices"))
            form = page.locator("[data-testid='stForm']")
            for label_text, value in (("Id", f"browser-gpu-{n}"), ("Name", f"Browser GPU {n}"), ("Vendor", "Class"),
                                      ("Source", "measured in class")):
                form.get_by_label(label_text, exact=True).fill(value)
            form.get_by_label("fp32 TFLOP/s", exact=True).fill("12")
            form.get_by_label("Memory bandwidth (GB/s)", exact=True).fill("400")
            settle("add a device", lambda: form.get_by_role("button", name="Save device").click())
            try:                      # the page draws what the run sent a moment after its end
                page.locator("[data-testid='stAlert']").filter(has_text=f"browser-gpu-{n}").first.wait_for(
                    timeout=15000)
            except Exception:  # noqa: BLE001
                errors.append(f"browser {n}, add a device: no 'Saved' message")
            settle("pick own device", lambda: choose("Device", f"Browser GPU {n}"))
            settle("open Layers", lambda: nav("Layers"))
        except Exception as e:  # noqa: BLE001
            errors.append(f"browser {n}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        finally:
            browser.close()


# == the run ==========================================================================================================

def _pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q / 100 * (len(v) - 1))))] if v else float("nan")


def measure(quick: bool = False, protocol: int | None = None, browsers: int | None = None) -> dict:
    """``protocol`` / ``browsers``: how many sessions of each kind (default 27 + 3; quick 3 + 0)."""
    sys.path.insert(0, str(ROOT))
    from core.devices import load_devices

    names = {i: d.name for i, d in load_devices(user_path=None).devices.items()}
    n_proto, n_browser = (3, 0) if quick else (27, 3)
    n_proto, n_browser = protocol if protocol is not None else n_proto, browsers if browsers is not None else n_browser
    if n_browser and not Path(CHROMIUM).exists():
        n_browser, n_proto = 0, n_proto + n_browser
    if n_browser:
        import playwright.sync_api  # noqa: F401 — here, not in three threads at once (a partly imported module)
    latencies: list = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cnn_calc_load_home_") as home, \
            tempfile.TemporaryDirectory(prefix="cnn_calc_load_cache_") as stats_dir:
        server = Server(Path(home), Path(stats_dir) / "cache.json")
        try:
            t0, cpu0, server_cpu0 = time.perf_counter(), time.process_time(), _cpu_s(server.proc.pid)
            threads = [threading.Thread(target=_browser_session, args=(server.url, i, names, latencies, errors))
                       for i in range(n_browser)]
            for th in threads:
                th.start()

            async def protocol_sessions():
                await asyncio.gather(*(_protocol_flow(server.url, i, names, latencies, errors, 0.05 * i)
                                       for i in range(n_proto)))

            asyncio.run(protocol_sessions())
            for th in threads:
                th.join(timeout=900)
            wall, client_cpu = time.perf_counter() - t0, time.process_time() - cpu0
            server_cpu = (_cpu_s(server.proc.pid) or 0.0) - (server_cpu0 or 0.0)
            end_mib, cache = server.rss(), server.cache()
            written = sorted(str(p.relative_to(home)) for p in Path(home).rglob("*"))
        finally:
            server.stop()
    times = [s for _, _, s in latencies]
    by_kind = {k: [s for kind, _, s in latencies if kind == k] for k in ("protocol", "browser")}
    steps: dict[str, list[float]] = {}
    for _, label, s in latencies:
        steps.setdefault(label, []).append(s)
    return {"sessions": n_proto + n_browser, "protocol_sessions": n_proto, "browser_sessions": n_browser,
            "steps": len(latencies), "errors": errors, "wall_s": wall, "server_cpu_s": server_cpu,
            "client_cpu_s": client_cpu,
            "p50_ms": _pct(times, 50) * 1e3, "p95_ms": _pct(times, 95) * 1e3, "max_ms": max(times, default=0) * 1e3,
            "by_kind": {k: {"n": len(v), "p50_ms": _pct(v, 50) * 1e3, "p95_ms": _pct(v, 95) * 1e3}
                        for k, v in by_kind.items() if v},
            "by_step": {k: {"n": len(v), "median_ms": statistics.median(v) * 1e3, "p95_ms": _pct(v, 95) * 1e3}
                        for k, v in steps.items()},
            "rss_idle_mib": server.idle_mib, "rss_peak_mib": max(server.samples, default=None),
            "rss_end_mib": end_mib, "rss_hwm_mib": (cache or {}).get("peak_rss_mib"), "cache": cache,
            "files_written": written, "cores": os.cpu_count()}


def markdown(out: dict) -> str:
    def mib(x):
        return f"{x:,.0f} MiB" if x is not None else "—"

    lines = ["## Classroom load (server mode)", "",
             f"{out['sessions']} concurrent sessions ({out['protocol_sessions']} over Streamlit's websocket protocol, "
             f"{out['browser_sessions']} in headless Chromium) against one `CNN_CALC_SERVER=1 streamlit run app.py` "
             f"on localhost ({out['cores']} cores, shared with the clients), each through the main flows with "
             f"{THINK_S[0]:g}–{THINK_S[1]:g} s between steps: {out['steps']} steps in {out['wall_s']:.0f} s.", "",
             "| | |", "|---|---:|",
             f"| errors (failed steps, exception or error boxes, another session's device seen) | "
             f"{len(out['errors'])} |",
             f"| widget-to-update latency p50 / p95 / max | {out['p50_ms']:,.0f} / {out['p95_ms']:,.0f} / "
             f"{out['max_ms']:,.0f} ms |"]
    lines += [f"| — {k} sessions p50 / p95 ({v['n']} steps) | {v['p50_ms']:,.0f} / {v['p95_ms']:,.0f} ms |"
              for k, v in out["by_kind"].items()]
    lines += [f"| server RSS: started (no session) / peak / at the end | {mib(out['rss_idle_mib'])} / "
              f"{mib(out['rss_peak_mib'])} / {mib(out['rss_end_mib'])} |",
              f"| server's own peak RSS (VmHWM, at its last cache lookup) | {mib(out.get('rss_hwm_mib'))} |",
              _cache_row(out.get("cache")),
              f"| files written to the server's $CNN_CALC_HOME | {len(out['files_written'])} |",
              f"| steps served per second (all sessions) | {out['steps'] / out['wall_s']:.1f} |",
              f"| CPU seconds: server / this driver (protocol sessions, Playwright; Chromium not counted) | "
              f"{out['server_cpu_s']:.0f} / {out['client_cpu_s']:.0f} |", "",
              "| step | n | median ms | p95 ms |", "|---|---:|---:|---:|"]
    lines += [f"| {k} | {v['n']} | {v['median_ms']:,.0f} | {v['p95_ms']:,.0f} |" for k, v in out["by_step"].items()]
    if out["errors"]:
        lines += ["", "Errors:", *(f"- {e}" for e in out["errors"][:20])]
    lines += ["", "Latency: from the change sent (protocol) or the click (browser) to the end of the script run it "
              "caused. Steps run one after another within a session and concurrently across sessions; the server "
              "runs one script thread per session under one Python interpreter, so on a loaded machine a step waits "
              "for the others' runs."]
    return "\n".join(lines) + "\n"


def _cache_row(c: dict | None) -> str:
    if not c:
        return "| shared cache (analyses and estimates, all sessions) | — |"
    rate = f"{c['hit_rate'] * 100:.0f} %" if c.get("hit_rate") is not None else "—"
    return (f"| shared cache: hit rate ({c['hits']:,} hits, {c['misses']:,} misses) / entries / approx. size / "
            f"evictions | {rate} / {c['entries']:,} / {c['bytes'] / 2 ** 20:,.0f} MiB / {c['evictions']:,} |")


def main(argv=None) -> dict:
    return quick_main(measure, markdown, argv, "3 protocol sessions, no browser (smoke test)")


if __name__ == "__main__":
    main()
