"""A browser test sees nothing of the one before it, though a module's tests share one Chromium
(the `browser` fixture of tests/conftest.py): no cookie (signed in before, signed out now), no
local or session storage, no phone emulation, the default window. Both rounds check that they
start clean against the same server and store, then leave all of it behind: whichever round
runs second fails if the cleaning between tests goes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser_support import WINDOW, as_phone, submit
from tests.heartbeat_support import ADMIN, Served, make_settings, served

LEFT = "localStorage.setItem('left', 'behind'); sessionStorage.setItem('left', 'behind')"
STORED = "return [localStorage.length, sessionStorage.length]"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server and store for both rounds: a session cookie left behind would still open it."""
    with served(make_settings(tmp_path_factory.mktemp("isolation"))) as running:
        yield running


def _signed_in(browser: Any) -> bool:
    from selenium.webdriver.common.by import By

    return bool(browser.find_elements(By.XPATH, "//button[text()='Sign out']"))


@pytest.mark.parametrize("round_", [1, 2])
def test_a_browser_test_starts_with_nothing_of_the_one_before(
    browser: Any, app: Served, round_: int
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(app.running.url + "/")
    assert browser.get_cookies() == [], f"round {round_}"
    assert not _signed_in(browser)
    assert browser.execute_script(STORED) == [0, 0]
    assert browser.execute_script("return window.innerWidth") == WINDOW["width"]
    assert browser.get_window_size() == WINDOW

    browser.find_element(By.NAME, "key").send_keys(ADMIN)
    submit(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button"))
    assert _signed_in(browser)
    assert [c["name"] for c in browser.get_cookies()] == ["reaper_session"]
    browser.execute_script(LEFT)
    assert browser.execute_script(STORED) == [1, 1]
    browser.set_window_size(800, 600)
    as_phone(browser)
    assert browser.execute_script("return window.innerWidth") == 390
