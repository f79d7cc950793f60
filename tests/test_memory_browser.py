"""Memory over a training step in a real browser (headless Chromium): the Estimates page's Memory tab for ResNet-50
at batch 32 and for an ONNX model uploaded on the Network page; the caption gives the peak core computes.
``SAVE_GRAPH_SCREENSHOTS=1`` writes the pictures to docs/graph/. Needs scripts/install_browser.sh."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect, sync_playwright

import core
from browser_ref import launch, start_server, stop_server
from core.onnx_import import import_onnx
from core.units import format_bytes
from test_app_graph import residual_onnx
from test_graph_browser import _shot, upload_onnx

CHART = "[data-testid='stVegaLiteChart']"


@pytest.fixture(scope="module")
def server():
    proc, url = start_server()
    yield url
    stop_server(proc)


def _peak_shown(page, totals: dict, shot: str) -> None:
    """Open the Memory tab; its caption gives the peak core computes and where it falls."""
    page.get_by_role("tab", name="Memory").click()
    expect(page.locator(CHART).first).to_be_visible(timeout=60000)
    page.wait_for_timeout(1500)                        # the chart draws its marks
    said = f"Peak {format_bytes(totals['training_bytes'], 2)} in {totals['training_peak_at']}"
    expect(page.get_by_text(said, exact=False).first).to_be_visible(timeout=30000)
    page.locator(CHART).first.scroll_into_view_if_needed()
    _shot(page, shot)


def test_resnet50_memory_over_a_step(server):
    t = core.analyze("resnet50", batch_size=32).totals
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server}/Estimates?model=resnet50&batch=32", wait_until="networkidle")
        _peak_shown(page, t, "memory_resnet50")
        browser.close()


def test_an_uploaded_onnx_models_memory(server, tmp_path):
    t = core.analyze(import_onnx(residual_onnx(), name="student_res.onnx").network).totals
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        upload_onnx(page, server, tmp_path)
        page.locator("[data-testid='stSidebarNav'] a", has_text="Estimates").click()
        expect(page.locator("h1", has_text="Time estimates")).to_be_visible(timeout=30000)
        _peak_shown(page, t, "memory_onnx_upload")
        browser.close()
