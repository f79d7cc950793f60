"""Screenshots of the running app in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

Usage: start the app (``streamlit run app.py --server.headless true --server.port 8599``), then
``python scripts/screenshot.py http://localhost:8599 docs/app.png``.
"""

import sys

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-quic",
        "--disable-component-update", "--disable-sync"]


def shoot(url: str, out: str, width: int = 1500, height: int = 1000) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(url, wait_until="networkidle")
        page.wait_for_selector("[data-testid='stMetric']", timeout=30000)
        page.wait_for_timeout(1500)
        page.screenshot(path=out, full_page=True)
        browser.close()


if __name__ == "__main__":
    shoot(sys.argv[1], sys.argv[2])
