"""The status page in a real headless browser (Debian's Chromium through Selenium): sign in,
see what bills and what goes when, the down monitor and the termination, keep a pod from the
page, pause and mute a monitor, no sideways scroll on a phone, the cookie's flags, a POST
without its CSRF token refused. Screenshots land in test-artifacts/ (see
tests/browser_support.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from reaper.core.units import utc
from tests.browser_support import as_desktop, as_phone, screenshot, submit
from tests.heartbeat_support import ADMIN
from tests.reap_support import START
from tests.web_support import EVIL_NAME, Fleet, fleet


@pytest.fixture
def demo_fleet(tmp_path: Path) -> Iterator[Fleet]:
    with fleet(tmp_path) as f:
        yield f


def _by() -> Any:
    from selenium.webdriver.common.by import By

    return By


def sign_in(browser: Any, f: Fleet, key: str = ADMIN) -> None:
    by = _by()
    browser.get(f.app.running.url + "/")
    field = browser.find_element(by.NAME, "key")
    field.send_keys(key)
    submit(browser, browser.find_element(by.CSS_SELECTOR, "form[action='/login'] button"))


def text_of(browser: Any, css: str) -> str:
    return str(browser.find_element(_by().CSS_SELECTOR, css).text)


def test_sign_in_and_see_the_fleet(browser: Any, demo_fleet: Fleet) -> None:
    f = demo_fleet
    browser.get(f.app.running.url + "/")
    assert browser.find_elements(_by().ID, "running") == [], "nothing before signing in"
    screenshot(browser, "signin-desktop")
    sign_in(browser, f, "not-the-key")
    assert "That is not the admin key." in text_of(browser, ".error")
    sign_in(browser, f)
    running = text_of(browser, "#running")
    assert "llm-finetune" in running and "$1.64/h" in running and "watchdog pinging" in running
    stopped = text_of(browser, "#stopped")
    assert EVIL_NAME in stopped, "the name as text, markup and all"
    assert browser.find_elements(_by().CSS_SELECTOR, "main script") == []
    due = START + timedelta(hours=47)
    assert f"Will be terminated {utc(due)}" in stopped
    monitors = browser.find_element(_by().CSS_SELECTOR, "li.monitor[data-state='down']")
    assert "trainer-box" in monitors.text and "down" in monitors.text
    terminations = text_of(browser, "#terminations")
    assert "old-run" in terminations and "confirmed" in terminations
    screenshot(browser, "status-desktop")


def test_keep_a_pod_from_the_page(browser: Any, demo_fleet: Fleet) -> None:
    f = demo_fleet
    sign_in(browser, f)
    item = browser.find_element(_by().ID, f"i-runpod-{f.stopped_id}")
    submit(browser, item.find_element(_by().XPATH, ".//button[text()='Keep 1 week']"))
    item = browser.find_element(_by().ID, f"i-runpod-{f.stopped_id}")
    assert "Kept until" in item.text and "by status page" in item.text
    assert f.app.store.history().kept[f"runpod:{f.stopped_id}"].by == "status page"
    screenshot(browser, "kept-desktop")
    submit(browser, item.find_element(_by().XPATH, ".//button[text()='Unkeep']"))
    item = browser.find_element(_by().ID, f"i-runpod-{f.stopped_id}")
    assert "Will be terminated" in item.text
    assert f"runpod:{f.stopped_id}" not in f.app.store.history().kept


def test_pause_and_mute_a_monitor_from_the_page(browser: Any, demo_fleet: Fleet) -> None:
    f = demo_fleet
    sign_in(browser, f)
    row = browser.find_element(_by().ID, "m-trainer-box")
    submit(browser, row.find_element(_by().XPATH, ".//button[text()='Mute 1 day']"))
    row = browser.find_element(_by().ID, "m-trainer-box")
    assert "muted until" in row.text
    submit(browser, row.find_element(_by().XPATH, ".//button[text()='Pause']"))
    row = browser.find_element(_by().ID, "m-trainer-box")
    assert row.get_attribute("data-state") == "paused"
    stored = f.app.store.get_monitor("trainer-box")
    assert stored is not None and stored.paused and stored.muted_until is not None
    submit(browser, row.find_element(_by().XPATH, ".//button[text()='Resume']"))
    row = browser.find_element(_by().ID, "m-trainer-box")
    assert row.get_attribute("data-state") != "paused"
    assert [a.kind for a in f.app.store.action_log()] == ["mute", "pause", "resume"]


def test_a_monitors_page_its_log_and_its_own_timeout(browser: Any, demo_fleet: Fleet) -> None:
    f = demo_fleet
    f.app.ping("trainer-box", "log", method="POST", body=b"checkpoint 3 written")
    sign_in(browser, f)
    row = browser.find_element(_by().ID, "m-trainer-box")
    row.find_element(_by().LINK_TEXT, "trainer-box").click()
    assert "checkpoint 3 written" in text_of(browser, "#log")
    field = browser.find_element(_by().NAME, "timeout")
    field.clear()
    field.send_keys("2h")
    submit(browser, browser.find_element(_by().XPATH, "//button[text()='Save']"))
    assert "now 2h" in text_of(browser, "#settings")
    stored = f.app.store.get_monitor("trainer-box")
    assert stored is not None and stored.timeout == timedelta(hours=2)
    as_phone(browser)
    screenshot(browser, "monitor-phone")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, "no sideways scroll on the monitor's page either"


def test_a_sign_in_link_on_a_phone_signs_in_once(browser: Any, demo_fleet: Fleet) -> None:
    from dataclasses import replace
    from urllib.parse import urlsplit

    from reaper.interfaces.web.session import create_login_link

    f = demo_fleet
    settings = replace(f.app.settings, public_url="https://reaper.example")
    link = create_login_link(settings, f.app.store, f.app.clock.now())
    path = urlsplit(link).path
    as_phone(browser)
    browser.get(f.app.running.url + path)
    assert browser.find_elements(_by().ID, "running") == [], "opening the link signs nobody in"
    submit(browser, browser.find_element(_by().CSS_SELECTOR, f"form[action='{path}'] button"))
    assert "llm-finetune" in text_of(browser, "#running")
    browser.delete_all_cookies()
    browser.get(f.app.running.url + path)
    submit(browser, browser.find_element(_by().CSS_SELECTOR, f"form[action='{path}'] button"))
    assert "used already or has expired" in browser.find_element(_by().TAG_NAME, "body").text
    assert browser.find_elements(_by().ID, "running") == []


def test_sign_out_ends_the_session(browser: Any, demo_fleet: Fleet) -> None:
    f = demo_fleet
    sign_in(browser, f)
    assert "llm-finetune" in text_of(browser, "#running")
    submit(browser, browser.find_element(_by().XPATH, "//button[text()='Sign out']"))
    assert browser.find_elements(_by().ID, "running") == []
    assert browser.find_elements(_by().NAME, "key"), "the sign-in page again"
    browser.get(f.app.running.url + "/")
    assert browser.find_elements(_by().ID, "running") == [], "and it stays signed out"


def test_no_horizontal_scroll_at_390_px(browser: Any, demo_fleet: Fleet) -> None:
    as_phone(browser)
    try:
        sign_in(browser, demo_fleet)
        width = browser.execute_script("return window.innerWidth")
        scroll = browser.execute_script("return document.documentElement.scrollWidth")
        assert width == 390
        assert scroll <= width, f"the page scrolls sideways: {scroll} > {width}"
        widest = browser.execute_script(
            "return Math.max(...Array.from(document.querySelectorAll('body *'))"
            ".map(e => e.getBoundingClientRect().right))"
        )
        assert widest <= width + 0.5
        screenshot(browser, "status-phone")
    finally:
        as_desktop(browser)


def test_the_cookie_is_httponly_strict_and_not_secure_on_loopback(
    browser: Any, demo_fleet: Fleet
) -> None:
    sign_in(browser, demo_fleet)
    [cookie] = browser.get_cookies()
    assert cookie["name"] == "reaper_session"
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["secure"] is False, "served on 127.0.0.1"
    assert 6.9 * 86400 < cookie["expiry"] - time.time() <= 7 * 86400, "Max-Age: 7 days"
    assert browser.execute_script("return document.cookie") == "", "not readable by scripts"


def test_a_post_without_its_csrf_token_is_refused(browser: Any, demo_fleet: Fleet) -> None:
    """A form like the page's, with the session cookie but without the token: refused."""
    f = demo_fleet
    sign_in(browser, f)
    page = browser.find_element(_by().TAG_NAME, "html")
    browser.execute_script(
        "const form = document.querySelector(\"form[action='/keep']\");"
        "form.querySelector(\"input[name='csrf']\").remove();"
        "form.submit();"
    )
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 10).until(expected_conditions.staleness_of(page))
    assert "missing or wrong CSRF token" in browser.find_element(_by().TAG_NAME, "body").text
    assert f.app.store.history().kept == {}
