"""Screenshots of every page of the running app in headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright), for docs/ and the README.

Usage: start the app (``streamlit run app.py --server.headless true --server.port 8599``), then
``python scripts/screenshot.py [http://localhost:8599] [docs]``.
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-quic",
        "--disable-component-update", "--disable-sync"]
PAGES = [("", "layers"), ("Roofline", "roofline"), ("Estimates", "estimates"), ("Devices", "devices"),
         ("Network", "network"), ("Benchmark", "benchmark"), ("Compare", "compare"),
         *((f"Course_labs?lab={i}", f"lab{i}") for i in range(1, 6)),
         # a link as a teacher would send it: a timm model (built without weights), batch, precision and device
         ("Estimates?model=timm:resnet50d&batch=64&dtype=fp16&device=a100-40gb-sxm", "link_timm")]


def shoot(url: str, out_dir: str, width: int = 1500, height: int = 1000) -> list[Path]:
    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": width, "height": height})
        for path, name in PAGES:
            page.goto(f"{url.rstrip('/')}/{path}", wait_until="networkidle")
            page.wait_for_selector("h1", timeout=30000)
            page.wait_for_timeout(2500)              # charts draw after the page settles
            target = Path(out_dir) / f"app_{name}.png"
            page.screenshot(path=str(target))
            out.append(target)
        browser.close()
    return out


if __name__ == "__main__":
    for f in shoot(sys.argv[1] if len(sys.argv) > 1 else "http://localhost:8599",
                   sys.argv[2] if len(sys.argv) > 2 else "docs"):
        print(f)
