"""A real headless browser for the status page's tests: Debian's Chromium, driven by Selenium
through Debian's chromedriver (no driver or browser is ever downloaded).

On a developer's machine without them the browser tests are skipped, and say why. `.ci/run`
installs both and sets REQUIRE_BROWSER_TESTS=1, which turns that skip into a failure: CI
never passes by not running them.

Starting Chromium costs about 2 s of CPU, so the tests share one per module (the `browser`
fixture of tests/conftest.py), and `clean` gives each test what a fresh one would: no cookie,
no stored data, no phone emulation, the default window.

Screenshots go to REAPER_ARTIFACTS (default `test-artifacts/` in the repository, ignored by
git): a test run leaves pictures of what a person would have seen.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# The flags this machine needs: no sandbox as root, and no background connections (the network
# is closed; Chromium would otherwise keep trying).
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
)
WINDOW = {"width": 1280, "height": 1000}
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}


def artifacts() -> Path:
    path = Path(os.environ.get("REAPER_ARTIFACTS", ROOT / "test-artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _found() -> tuple[str, str] | str:
    """(browser, driver) paths, or why there are none."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (make test installs requirements-dev.txt)"
    browser = next((p for p in map(shutil.which, BROWSERS) if p), None)
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        return "no Chromium and chromedriver found (apt-get install chromium chromium-driver)"
    return browser, driver


def require_browser() -> tuple[str, str]:
    found = _found()
    if isinstance(found, str):
        if os.environ.get("REQUIRE_BROWSER_TESTS") == "1":
            pytest.fail(f"REQUIRE_BROWSER_TESTS=1 but {found}")
        pytest.skip(f"browser tests skipped: {found}")
    return found


@contextmanager
def chromium() -> Iterator[Any]:
    """A fresh headless Chromium with an empty profile; quit at the end."""
    browser, driver_path = require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="reaper-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={WINDOW['width']},{WINDOW['height']}")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def clean(driver: Any) -> None:
    """Leave nothing of the test before: its windows, cookies (a cookie is the host's whatever
    the port, and every test's server is on 127.0.0.1), stored data and cache of every origin
    ("*"), its phone emulation and window size. about:blank first, so that no page of the test
    before is left to write anything back."""
    first, *others = driver.window_handles
    for handle in others:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(first)
    driver.get("about:blank")
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    driver.execute_cdp_cmd("Network.clearBrowserCache", {})
    driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": "*", "storageTypes": "all"})
    as_desktop(driver)
    driver.set_window_size(WINDOW["width"], WINDOW["height"])


def as_phone(driver: Any) -> None:
    """390 CSS px wide, as a phone: headless windows cannot be that narrow, the emulation can."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)


def as_desktop(driver: Any) -> None:
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def screenshot(driver: Any, name: str, *, full_page: bool = True) -> Path:
    """A PNG of the page under artifacts(); the whole page's height when `full_page`."""
    path = artifacts() / f"{name}.png"
    if full_page:
        import base64

        metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {
                    "x": 0,
                    "y": 0,
                    "width": size["width"],
                    "height": size["height"],
                    "scale": 1,
                },
            },
        )
        path.write_bytes(base64.b64decode(shot["data"]))
    else:
        driver.save_screenshot(str(path))
    return path


def submit(browser: Any, button: Any) -> None:
    """Click a form's button and wait until the browser has left the page it was on."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    page = browser.find_element(By.TAG_NAME, "html")
    button.click()

    def left(_driver: Any) -> bool:
        # Asking an element of a page being replaced may fail in more ways than "stale":
        # chromium also answers "Node with given id does not belong to the document" while
        # it swaps documents. Either way the old page is gone.
        try:
            page.is_enabled()
        except WebDriverException:
            return True
        return False

    WebDriverWait(browser, 10).until(left)
