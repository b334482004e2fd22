"""The status page and a monitor's page are readable on a 390 px phone, checked in a real
headless browser (Debian's Chromium, see tests/browser_support.py), not only "no sideways
scroll": every cell and line holds a few characters a line (the ping log's body once fell to
one letter a line over the next column), no two cells of a row overlap, no text leaves its
card (the delete label once ran off it), and the spend chart's axis labels are at least
11 CSS px. After Keep on the page, the page says what was done."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import as_phone, screenshot, submit
from tests.heartbeat_support import ADMIN
from tests.web_support import Fleet, fleet

LONG_LOG = (
    b"epoch 12/40 loss=0.4113 val_loss=0.4502 lr=3e-4 step 120000 checkpoint written to "
    b"/workspace/checkpoints/run-2026-12-02/epoch-12.pt (1.4 GB) in 38s"
)

# Text shorter than this is left alone (a cell holding "3" is readable at any width).
READABLE = r"""
const bad = [];
const few = 4;
const cells = document.querySelectorAll(
  'main td, main th, main li > span, main label, main p, main h2, main button, main pre');
for (const el of cells) {
  const text = el.innerText.trim();
  if (text.length < 2 * few) continue;
  const range = document.createRange();
  range.selectNodeContents(el);
  const lines = new Set(Array.from(range.getClientRects())
    .filter(r => r.width > 0).map(r => Math.round(r.bottom)));
  if (text.replace(/\s+/g, '').length / Math.max(lines.size, 1) < few)
    bad.push(text.slice(0, 40) + ' | ' + lines.size + ' lines');
}
return bad;
"""

OVERLAPS = r"""
const bad = [];
const rows = document.querySelectorAll('main tr, main ul.rows > li');
for (const row of rows) {
  const boxes = Array.from(row.children).filter(c => c.innerText.trim())
    .map(c => [c, c.getBoundingClientRect()]);
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, ra] = boxes[i], [b, rb] = boxes[j];
      const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
      const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
      if (w > 1 && h > 1)
        bad.push(a.innerText.slice(0, 20) + ' over ' + b.innerText.slice(0, 20));
    }
}
return bad;
"""

OUTSIDE_CARDS = r"""
const bad = [];
for (const card of document.querySelectorAll('main .card')) {
  const box = card.getBoundingClientRect();
  const walker = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim() || node.parentElement.closest('svg')) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects())
      if (r.width > 0 && (r.right > box.right + 0.5 || r.left < box.left - 0.5))
        bad.push(node.textContent.trim().slice(0, 40));
  }
}
return bad;
"""

CHART_LABELS = r"""
const sizes = [], clipped = [];
for (const svg of document.querySelectorAll('svg[viewBox]')) {
  const box = svg.getBoundingClientRect();
  const scale = box.width / svg.viewBox.baseVal.width;
  for (const text of svg.querySelectorAll('text')) {
    sizes.push(parseFloat(getComputedStyle(text).fontSize) * scale);
    const r = text.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 ||
        r.bottom > box.bottom + 0.5)
      clipped.push(text.textContent);
  }
  const boxes = Array.from(svg.querySelectorAll('text')).map(t => t.getBoundingClientRect());
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const w = Math.min(boxes[i].right, boxes[j].right) - Math.max(boxes[i].left, boxes[j].left);
      const h = Math.min(boxes[i].bottom, boxes[j].bottom) - Math.max(boxes[i].top, boxes[j].top);
      if (w > 0 && h > 0) clipped.push('overlapping labels');
    }
}
return [sizes, clipped];
"""


@pytest.fixture
def phone_fleet(tmp_path: Path) -> Iterator[Fleet]:
    with fleet(tmp_path) as f:
        for _ in range(3):
            f.app.ping("trainer-box", "log", method="POST", body=LONG_LOG)
        f.app.ping("trainer-box", "fail", method="POST", body=b"CUDA out of memory")
        yield f


def _by() -> Any:
    from selenium.webdriver.common.by import By

    return By


def _sign_in(browser: Any, f: Fleet) -> None:
    browser.get(f.app.running.url + "/")
    browser.find_element(_by().NAME, "key").send_keys(ADMIN)
    submit(browser, browser.find_element(_by().CSS_SELECTOR, "form[action='/login'] button"))


def _readable(browser: Any) -> None:
    assert browser.execute_script("return window.innerWidth") == 390
    assert browser.execute_script(READABLE) == [], "a cell of a letter or two a line"
    assert browser.execute_script(OVERLAPS) == [], "cells drawn over each other"
    assert browser.execute_script(OUTSIDE_CARDS) == [], "text outside its card"


def test_a_monitors_page_is_readable_at_390_px(browser: Any, phone_fleet: Fleet) -> None:
    as_phone(browser)
    _sign_in(browser, phone_fleet)
    browser.get(phone_fleet.app.running.url + "/monitor/trainer-box")
    screenshot(browser, "monitor-phone-layout")
    assert "checkpoint written" in browser.find_element(_by().ID, "log").text
    _readable(browser)
    # A longer host: its delete label once ran off the card.
    browser.get(f"{phone_fleet.app.running.url}/monitor/runpod-{phone_fleet.running_id}")
    assert "and its ping log" in browser.find_element(_by().ID, "delete").text
    _readable(browser)


def test_the_status_page_and_its_charts_are_readable_at_390_px(
    browser: Any, phone_fleet: Fleet
) -> None:
    as_phone(browser)
    _sign_in(browser, phone_fleet)
    screenshot(browser, "status-phone-layout")
    _readable(browser)
    sizes, clipped = browser.execute_script(CHART_LABELS)
    assert sizes, "the page has a spend chart with axis labels"
    assert min(sizes) >= 11, f"chart labels of {min(sizes):.1f} CSS px"
    assert clipped == [], "chart labels cut by the chart's edge or over each other"


def test_keep_on_the_page_says_what_was_done(browser: Any, phone_fleet: Fleet) -> None:
    f = phone_fleet
    as_phone(browser)
    _sign_in(browser, f)
    item = browser.find_element(_by().ID, f"i-runpod-{f.stopped_id}")
    submit(browser, item.find_element(_by().XPATH, ".//button[text()='Keep 1 week']"))
    notice = browser.find_element(_by().ID, "notice").text
    assert notice.startswith("Kept ") and "until" in notice and "UTC" in notice, notice
    _readable(browser)
    item = browser.find_element(_by().ID, f"i-runpod-{f.stopped_id}")
    submit(browser, item.find_element(_by().XPATH, ".//button[text()='Unkeep']"))
    notice = browser.find_element(_by().ID, "notice").text
    assert "no longer kept" in notice, notice
    browser.get(f.app.running.url + "/")
    assert browser.find_elements(_by().ID, "notice") == [], "said once, after the redirect"
