"""Live runs on a page (the Benchmark page's timing, calibration, across-networks and throughput sections): a job
under a progress bar, a Stop button, and its result kept in session state and shown on every later run of the page.
``section`` is one such run-and-show block; ``settle`` opens the page.

Stop, and its limits: a click reaches the script only as a new run of it. With Streamlit's default fast reruns
(``runner.fastReruns``), a click on Stop (or on any other control) while a job runs asks the running script to stop
— Streamlit raises its stop exception there at the next ``st`` call, here the next progress update — and starts the
page again at once in a new script thread. That new run's Stop callback also sets the job's ``stop`` flag (a dict
kept in session state, shared by both threads) which the old job's ``cancel`` callable checks before each warm-up or
timed run. So a job ends between two of its runs (calibration: between its stages), never inside one; ``time_module``
and ``calibrate`` release the one-run-per-process lock and restore the module in their ``finally``. The stopping
thread must not touch ``st.session_state`` (every access there raises the stop exception again), so it reports
through that dict; the new page run (``settle``) waits a few seconds for it to end, then says what happened.
"""

from __future__ import annotations

import time
from typing import Callable

import streamlit as st

import core

RUNNING = "bench_job"           # the job of this session: {"what", "stop", "done", "stopped"}, shared across threads
IDLE_STOP = "bench_idle_stop"   # Stop was clicked with nothing running
WAIT_S = 10.0                   # how long a new page run waits for a stopping job to end


def _request_stop() -> None:
    job = st.session_state.get(RUNNING)
    if job is not None and not job["done"]:
        job["stop"] = True           # the session flag the running job's cancel() reads
    else:
        st.session_state[IDLE_STOP] = True


def settle() -> None:
    """A job of this session may still be ending in the script run this click interrupted: wait for it, briefly,
    then say how it ended (or that Stop found nothing running)."""
    job = st.session_state.get(RUNNING)
    if job is not None:
        end = time.monotonic() + WAIT_S
        while not job["done"] and time.monotonic() < end:
            time.sleep(0.05)
        if not job["done"]:
            st.info(f"The {job['what']} run is still finishing its current step; it stops before the next one.")
        else:
            st.session_state[RUNNING] = None
            if job["stopped"]:
                st.warning(f"The {job['what']} run was stopped before it finished (Stop or another control was "
                           "clicked); nothing from it was kept.")
    if st.session_state.pop(IDLE_STOP, False):
        st.info("Nothing was running.")


def run(what: str, work: Callable, keep_as: str):
    """Run ``work(progress, cancel)`` under a progress bar and keep its result in ``st.session_state[keep_as]``. A
    refused or failed run (``CalcError``) is shown with the engine's message, keeps nothing and returns None. When
    Streamlit stops this script run (a click during the job), its exception passes through; the job dict records it
    (``stopped``, ``done``) without touching ``st.session_state``."""
    job = {"what": what, "stop": False, "done": False, "stopped": False}
    st.session_state[RUNNING] = job
    bar = st.progress(0.0, text=f"{what}: starting (loading torch)…")

    def progress(fraction: float, message: str) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=f"{what}: {message}")

    out = None
    try:
        out = work(progress, lambda: job["stop"])
    except core.CalcError as e:
        if job["stop"]:
            job["stopped"] = True
            st.warning(f"{what} stopped: {e}")
        else:
            st.error(f"{what} refused: {e}")
    except ImportError as e:
        st.error(f"{what} needs PyTorch, which could not be imported here: {e}")
    except BaseException:            # Streamlit stopping this script run
        job["stopped"] = True
        raise
    finally:
        job["done"] = True
    if st.session_state.get(RUNNING) is job:
        st.session_state[RUNNING] = None
    bar.empty()
    if out is not None:
        st.session_state[keep_as] = out
    return out


def section(what: str, keep_as: str, work: Callable, show: Callable, *, start: tuple[str, str], stop: str,
            buttons=None, missing: str | None = None, done: Callable | None = None) -> None:
    """One run-and-show section: the Start button (``start``: label, key) and a Stop button (key ``stop``) side by
    side in ``buttons`` (two columns; by default a narrow pair on a new row); on Start, ``work`` runs (``run``) unless
    ``missing`` says what to choose first, and ``done()`` follows a kept result; then ``show(result)`` draws the
    result kept from this or an earlier run, if any."""
    left, right = buttons or st.columns([2, 1, 5])[:2]
    label, key = start
    clicked = left.button(label, key=key, type="primary")
    right.button("Stop", key=stop, on_click=_request_stop,
                 help="Ends the run in progress between two of its timed runs (see the page's notes on Stop).")
    if clicked:
        if missing:
            st.error(missing)
        elif run(what, work, keep_as) is not None and done is not None:
            done()
    kept = st.session_state.get(keep_as)
    if kept:
        show(kept)
