"""End to end in a real browser: the Streamlit server, headless Chromium (Debian's /usr/bin/chromium driven by
Playwright), the MNIST conv2-128 variant picked in the sidebar, the batch size changed, the totals and the roofline
chart following. Needs scripts/install_browser.sh (the README's test command runs it)."""

import pytest
from playwright.sync_api import expect, sync_playwright

from browser_ref import ARGS, metric, start_server, stop_server


@pytest.fixture(scope="module")
def server():
    proc, url = start_server()
    yield url
    stop_server(proc)


def test_pick_variant_change_batch_see_totals_and_roofline(server):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(server, wait_until="networkidle")
        expect(page.locator("[data-testid='stMetric']").first).to_be_visible(timeout=30000)
        assert metric(page, "Parameters") == "1,199,882"

        # pick the variant in the sidebar's searchable select box
        page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").first.click()
        page.keyboard.type("conv2_128")
        page.keyboard.press("Enter")
        expect(page.locator("[data-testid='stMetric']").filter(has_text="Parameters").first) \
            .to_contain_text("2,398,026", timeout=20000)          # conv2 → 128 channels, fc1 → 18432·128
        gmacs_b1 = float(metric(page, "Forward GMACs"))
        assert gmacs_b1 == round(23_788_928 / 1e9, 3)         # 11,992,448 + 10,616,832 (conv2) + 1,179,648 (fc1)

        # batch 1 → 8 in the number box: MACs follow linearly
        box = page.locator("[data-testid='stSidebar'] input[type='number']").first
        box.fill("8")
        box.press("Enter")
        expect(page.locator("[data-testid='stMetric']").filter(has_text="Forward GMACs").first) \
            .not_to_contain_text(f"{gmacs_b1:.3f}", timeout=20000)
        # 8 × 23,788,928 MACs (the variant's per-sample count) = 0.190 G, as the page rounds it
        assert metric(page, "Forward GMACs") == f"{8 * 23_788_928 / 1e9:,.3f}"

        # the roofline page keeps the choice and draws the chart; its network point moves with the batch
        page.wait_for_timeout(1500)                    # let the batch change finish before navigating
        page.locator("[data-testid='stSidebarNav'] a", has_text="Roofline").click()   # same session, same choice
        page.wait_for_timeout(2000)
        chart = page.locator("[data-testid='stVegaLiteChart']").first
        expect(chart).to_be_visible(timeout=30000)
        expect(page.locator("h1", has_text="Roofline")).to_be_visible(timeout=20000)
        page.wait_for_timeout(1000)
        intensity_b8 = metric(page, "Network intensity")
        assert page.locator("[data-testid='stSidebar'] input[type='number']").first.input_value() == "8"
        page.locator("[data-testid='stSidebar'] input[type='number']").first.fill("1")
        page.locator("[data-testid='stSidebar'] input[type='number']").first.press("Enter")
        expect(page.locator("[data-testid='stMetric']").filter(has_text="Network intensity").first) \
            .not_to_contain_text(intensity_b8, timeout=20000)
        browser.close()


def _params_caption(page):
    return page.locator("[data-testid='stCaptionContainer']").filter(has_text="parameters").first


def test_layer_table_edit_applies_and_an_invalid_one_is_refused_at_its_row(server):
    """The table is a canvas grid AppTest cannot type into: type into it here. Cells are addressed from the grid's
    corner (header and rows 35 px high at this viewport); conv2 is row 3."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(f"{server}/Network", wait_until="networkidle")
        expect(_params_caption(page)).to_contain_text("1,199,882", timeout=30000)
        page.wait_for_timeout(2000)
        grid = page.locator("[data-testid='stDataFrame']").first.bounding_box()

        def type_into(dx: float, text: str) -> None:
            x, y = grid["x"] + dx, grid["y"] + 123
            page.mouse.click(x, y)                               # select the cell
            page.wait_for_timeout(300)
            page.mouse.click(x, y)                               # open its editor
            page.wait_for_timeout(300)
            page.keyboard.press("Control+A")
            page.keyboard.type(text)
            page.wait_for_timeout(300)
            page.keyboard.press("Enter")

        type_into(345, "128")                                    # conv2 channels 64 → 128
        # 128·32·9 + 128 = 36,992 (conv2); 18,432·128 + 128 = 2,359,424 (fc1); + 320 + 1,290 = 2,398,026
        expect(_params_caption(page)).to_contain_text("2,398,026", timeout=20000)
        page.wait_for_timeout(1500)
        type_into(425, "30")                                     # conv2 kernel 3 → 30: larger than 26×26
        alert = page.locator("[data-testid='stAlert']").filter(has_text="Not applied").first
        expect(alert).to_contain_text("row 3 · conv2", timeout=20000)
        expect(alert).to_contain_text("larger than its padded input 26×26")
        expect(_params_caption(page)).to_contain_text("2,398,026")    # the last valid network is kept
        browser.close()


def test_a_fresh_server_opened_at_a_page_url_keeps_the_app_navigation():
    """Streamlit treats a ``pages/`` folder beside app.py as an old-style page folder when a fresh server's first
    visit is a page URL (the app's pages live in ``views/`` for that reason); the page must still come with app.py's
    menu (titled sections, no "app" entry)."""
    proc, url = start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/Estimates", wait_until="networkidle")
            expect(page.locator("h1", has_text="Time estimates")).to_be_visible(timeout=30000)
            nav = page.locator("[data-testid='stSidebarNav']")
            expect(nav).to_contain_text("CNN performance calculator", timeout=20000)
            assert not nav.inner_text().startswith("app")
            browser.close()
    finally:
        stop_server(proc)


LINKED = "/Estimates?model=resnet50&batch=64&dtype=fp16&device=a100-40gb-sxm"
SHOWN = ("Forward", "Backward", "Training step", "Training throughput")


def _view(page) -> dict:
    """What the Estimates page shows: its title, the sidebar's choices, its metrics."""
    side = page.locator("[data-testid='stSidebar']")
    return {"title": page.locator("h1").first.inner_text(),
            **{name: side.locator(f"input[aria-label='{name}']").input_value()     # select boxes: their text box
               for name in ("Network", "Precision", "Device")},
            "batch": side.locator("input[type='number']").first.input_value(),
            **{label: metric(page, label) for label in SHOWN}}


def _copied_link(page) -> str:
    """Press the copy button of the sidebar's link and read the clipboard (what a user would paste)."""
    code = page.locator("[data-testid='stSidebar'] [data-testid='stCode']").first
    code.hover()
    code.locator("button").first.click()
    page.wait_for_timeout(300)
    return page.evaluate("navigator.clipboard.readText()")


def test_a_copied_link_reopens_the_same_view_in_a_fresh_browser(server):
    from core import estimate

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        sender = browser.new_context(viewport={"width": 1400, "height": 1000},
                                     permissions=["clipboard-read", "clipboard-write"])
        page = sender.new_page()
        page.goto(server + LINKED, wait_until="networkidle")
        expect(page.locator("h1", has_text="Time estimates")).to_be_visible(timeout=30000)
        expect(page.locator("[data-testid='stMetric']").filter(has_text="Forward").first).to_be_visible(timeout=30000)
        page.wait_for_timeout(1000)
        opened = _view(page)
        # the link's choices, and the engine's own figures for them (the page's format: ms with 3 decimals)
        e = estimate("resnet50", "a100-40gb-sxm", batch_size=64, dtype="fp16").totals
        assert (opened["Network"], opened["batch"], opened["Precision"], opened["Device"]) == \
            ("ResNet · resnet50", "64", "fp16", "NVIDIA A100 SXM4 (40 GB)")
        assert opened["Forward"] == f"{e['forward_s'] * 1e3:,.3f} ms"
        assert opened["Training step"] == f"{e['training_step_s'] * 1e3:,.3f} ms"
        assert _copied_link(page) == server + LINKED        # the view as opened, nothing added

        # a change in the sidebar goes into the URL and into the link
        box = page.locator("[data-testid='stSidebar'] input[type='number']").first
        box.fill("128")
        box.press("Enter")
        expect(page.locator("[data-testid='stMetric']").filter(has_text="Forward").first) \
            .not_to_contain_text(opened["Forward"], timeout=20000)
        page.wait_for_timeout(1500)
        changed = _view(page)
        link = _copied_link(page)
        assert link == server + LINKED.replace("batch=64", "batch=128") == page.url

        # a fresh context (no session, no cookies) opened at the copied link shows the same view
        receiver = browser.new_context(viewport={"width": 1400, "height": 1000})
        other = receiver.new_page()
        other.goto(link, wait_until="networkidle")
        expect(other.locator("h1", has_text="Time estimates")).to_be_visible(timeout=30000)
        expect(other.locator("[data-testid='stMetric']").filter(has_text="Forward").first) \
            .to_contain_text(changed["Forward"], timeout=30000)
        assert _view(other) == changed
        assert other.locator("[data-testid='stAlert']").count() == 0          # nothing in the link was refused

        # Streamlit's page menu drops query parameters; the next page's run writes them back
        page.locator("[data-testid='stSidebarNav'] a", has_text="Roofline").click()
        expect(page.locator("h1", has_text="Roofline")).to_be_visible(timeout=30000)
        page.wait_for_url("**/Roofline?model=resnet50&batch=128**", timeout=20000)
        assert _copied_link(page) == server + "/Roofline?model=resnet50&batch=128&dtype=fp16&device=a100-40gb-sxm"
        browser.close()


def test_an_uploaded_onnx_model_shows_its_totals_and_travels_in_a_copied_link(server, tmp_path):
    """Issue 16's path end to end: a student's own model exported to ONNX, uploaded on the Network page, its counts
    on the page, and the copied link opening the same network in a fresh browser (the edited network travels packed
    in the link)."""
    import torch
    from torch import nn

    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10)).eval()
    path = tmp_path / "student_net.onnx"
    torch.onnx.export(model, (torch.randn(1, 3, 32, 32),), str(path), dynamo=False, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)     # BatchNorm kept as its own node
    expected = sum(p.numel() for p in model.parameters())
    # 16·3·9 + 16 = 448; BN 2·16 = 32; 32·16·9 + 32 = 4,640; 32·10 + 10 = 330: 448 + 32 + 4,640 + 330 = 5,450
    assert expected == 5_450
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        sender = browser.new_context(viewport={"width": 1500, "height": 1000},
                                     permissions=["clipboard-read", "clipboard-write"])
        page = sender.new_page()
        page.goto(f"{server}/Network", wait_until="networkidle")
        expect(_params_caption(page)).to_contain_text("1,199,882", timeout=30000)      # the default network first
        page.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(str(path))
        expect(page.locator("[data-testid='stAlert']").filter(has_text="Imported student_net.onnx").first) \
            .to_be_visible(timeout=60000)
        expect(_params_caption(page)).to_contain_text(f"{expected:,} parameters", timeout=30000)
        page.wait_for_timeout(1500)
        link = _copied_link(page)
        assert "model=custom" in link and "net=" in link

        receiver = browser.new_context(viewport={"width": 1500, "height": 1000})
        other = receiver.new_page()
        other.goto(link, wait_until="networkidle")
        expect(other.locator("h1", has_text="Network")).to_be_visible(timeout=30000)
        expect(_params_caption(other)).to_contain_text(f"{expected:,} parameters", timeout=30000)
        assert other.locator("[data-testid='stAlert']").filter(has_text="Link parameter").count() == 0
        other.locator("[data-testid='stSidebarNav'] a", has_text="Layers").click()     # its totals on Layers too
        expect(other.locator("[data-testid='stMetric']").filter(has_text="Parameters").first) \
            .to_contain_text(f"{expected:,}", timeout=30000)
        browser.close()


_CLIPPED = "e => [e, ...e.querySelectorAll('*')].some(x => x.scrollWidth > x.clientWidth + 1)"


def test_no_metric_value_is_cut_on_a_laptop_screen(server):
    """Six metrics in a row at Streamlit's 2.25rem showed ResNet-50's parameter count as "25,55…" at 1280 pixels
    and ViT-B's as "86,567,6…" at 1500: every value is whole at 1024, 1280 and 1500 pixels, for the widest counts
    of the zoo (ViT-B/16: 86,567,656 parameters, torchvision's published figure)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for width in (1024, 1280, 1500):
            page = browser.new_page(viewport={"width": width, "height": 800})
            page.goto(f"{server}/?model=vit_b_16", wait_until="networkidle")
            expect(page.locator("[data-testid='stMetric']").filter(has_text="Parameters").first) \
                .to_contain_text("86,567,656", timeout=30000)
            # the row streams in metric by metric: the first can be whole before the sixth is drawn
            expect(page.locator("[data-testid='stMetricValue']")).to_have_count(6, timeout=30000)
            values = page.locator("[data-testid='stMetricValue']").all()
            clipped = [v.inner_text() for v in values if v.evaluate(_CLIPPED)]
            assert clipped == [], f"cut at {width} px: {clipped}"
            page.close()
        browser.close()
