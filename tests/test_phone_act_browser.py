"""The `/act/<token>` page in a real headless browser at a phone's width, as Bark's tap opens
it: what it will do and its buttons, no sideways scroll, names as text; the press keeps the
pod (the same record a chat button writes), the "done" page links back to the status page,
and the spent link says so on a second visit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser_support import as_phone, screenshot, submit
from tests.phone_support import PUBLIC, link_path, phone
from tests.settings_support import replaced


def test_the_action_page_on_a_phone_keeps_the_pod(browser: Any, tmp_path: Path) -> None:
    with phone(tmp_path, telegram=False, bark=True) as p:
        assert p.bark is not None
        pod = p.w.runpod.add_pod(status="EXITED", name="<i>sweep</i> & co")
        p.warn()
        [push] = [x for x in p.bark.pushes if "will be terminated" in x["title"]]
        assert push["url"].startswith(f"{PUBLIC}/act/")
        from selenium.webdriver.common.by import By

        with p.served() as app:
            # The page as a browser reaches it: REAPER_PUBLIC_URL is the address it opens, whose
            # origin is the only one a POST may come from.
            app.running.asgi.app.settings = replaced(p.settings, public_url=app.running.url)
            as_phone(browser)
            browser.get(app.running.url + link_path(push["url"]))
            text = browser.find_element(By.TAG_NAME, "body").text
            assert "<i>sweep</i> & co" in text, "the name as text, markup and all"
            assert browser.find_elements(By.CSS_SELECTOR, "i") == []
            labels = [b.text for b in browser.find_elements(By.TAG_NAME, "button")]
            assert labels[:2] == ["Keep 1 day", "Keep 1 week"] and any(
                "Terminate" in label for label in labels
            )
            scroll = browser.execute_script("return document.documentElement.scrollWidth")
            assert scroll <= 390, f"the page scrolls sideways: {scroll}"
            screenshot(browser, "act-phone")
            assert p.actions() == [], "opening the page changes nothing"
            submit(browser, browser.find_element(By.XPATH, "//button[text()='Keep 1 day']"))
            body = browser.find_element(By.TAG_NAME, "body").text
            assert "Done" in body, body[:400]
            # The way on: the status page of the same server.
            back = browser.find_element(By.LINK_TEXT, "Open the status page")
            assert back.get_attribute("href") == app.running.url + "/"
            [record] = p.actions()
            assert (record.kind, record.done, record.via) == ("keep", True, "action link")
            browser.get(app.running.url + link_path(push["url"]))
            assert "unknown, used or expired" in browser.find_element(By.TAG_NAME, "body").text
        kept = p.w.store().history().kept
        assert f"runpod:{pod}" in kept
