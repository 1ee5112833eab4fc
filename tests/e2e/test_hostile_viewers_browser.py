"""Hostile corpus text and questions in the viewers, opened in headless chromium (issue 30,
"Viewer and show"): misses.html and the label page (search results, a document, the question
box) show `<script>`, `</textarea>`, `javascript:` links and attribute breakers as text, and
nothing of theirs runs. Every payload, if it ran, would set ``window.__pwned``."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers import DEMO, label_settings
from sweep.label.app import build_app
from sweep.label.server import LabelServer
from sweep.outputs.misses_html import render_page

pytestmark = pytest.mark.slow

PAYLOADS = [
    "<script>window.__pwned='script'</script>",
    "</textarea><script>window.__pwned='textarea'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "\" onmouseover=\"window.__pwned='attr'\" x=\"",
    "' autofocus onfocus='window.__pwned=\"quote\"' x='",
    "[click](javascript:window.__pwned='md') <a href=\"javascript:window.__pwned='a'\">go</a>",
    "<svg onload=\"window.__pwned='svg'\"></svg>",
    "<style>@import 'javascript:window.__pwned=1'</style>",
    "]]><!-- --><iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
]
HOSTILE = " zebra ".join(PAYLOADS)


def _nothing_ran(driver: object) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    assert driver.execute_script("return window.__pwned === undefined")  # type: ignore[attr-defined]
    try:
        _ = driver.switch_to.alert  # type: ignore[attr-defined]
        pytest.fail("an alert opened")
    except NoAlertPresentException:
        pass
    found = driver.execute_script("""  // type: ignore
        const bad = [];
        for (const el of document.querySelectorAll('*')) {
          for (const a of el.attributes) {
            if (/^on/i.test(a.name)) bad.push(el.tagName + ' ' + a.name);
            if (/^\\s*javascript:/i.test(a.value)) bad.push(el.tagName + ' ' + a.name + '=js');
          }
          if (['IFRAME', 'SVG', 'IMG'].includes(el.tagName.toUpperCase())) bad.push(el.tagName);
        }
        return bad;""")  # type: ignore[attr-defined]
    assert found == []


def _view() -> dict:
    text = f"Before. {HOSTILE} After."
    return {
        "qid": "q<1>\"'", "cause": "ranked_low", "detail": HOSTILE, "question": HOSTILE,
        "first_relevant_rank": 7, "dense_rank": 7, "bm25_rank": None, "status": "scored",
        "passages": [{"doc_id": "evil<script>.md", "window": [0, len(text)],
                      "evidence": [8, 8 + len(HOSTILE)], "text": text, "page": None,
                      "chunks": [{"chunk_id": "evil\"><script>window.__pwned=1</script>#0",
                                  "start": 0, "end": len(text), "n_tokens": 40,
                                  "header": HOSTILE, "relevant": True, "cut": None}]}],
        "hits": [{"rank": 1, "chunk_id": "x\"><img src=x onerror=alert(1)>", "score": 0.5,
                  "found_by": "<b>dense</b>", "dense_rank": 1, "bm25_rank": None,
                  "relevant": False, "n_tokens": 3, "heading": HOSTILE}],
    }


def test_misses_page_shows_hostile_text_and_runs_none_of_it(tmp_path: Path,
                                                            browser: object) -> None:
    from selenium.webdriver.common.by import By

    page = tmp_path / "misses.html"
    page.write_text(render_page([_view()], HOSTILE, {}), encoding="utf-8")
    driver = browser
    driver.get(page.as_uri())  # type: ignore[attr-defined]
    item = driver.find_element(By.TAG_NAME, "details")  # type: ignore[attr-defined]
    item.find_element(By.TAG_NAME, "summary").click()
    _nothing_ran(driver)
    assert HOSTILE in item.find_element(By.TAG_NAME, "summary").text  # shown, as text
    mark = item.find_element(By.CSS_SELECTOR, ".passage mark")
    assert mark.get_attribute("textContent") == HOSTILE
    assert driver.title == f"{HOSTILE}"[:len(driver.title)] and driver.title  # type: ignore[attr-defined]
    assert driver.execute_script("return document.scripts.length") == 0  # type: ignore[attr-defined]


def test_label_page_shows_hostile_documents_and_questions_as_text(tmp_path: Path,
                                                                   browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    shutil.copytree(DEMO / "corpus", tmp_path / "corpus")
    (tmp_path / "corpus" / "evil.md").write_text(f"# {PAYLOADS[0]} zebra\n\n{HOSTILE}\n")
    (tmp_path / "corpus" / "evil.html").write_text(
        "<html><body><p>zebra &lt;script&gt;window.__pwned='entity'&lt;/script&gt; "
        "<a href=\"javascript:window.__pwned='link'\">zebra link</a></p></body></html>")
    app = build_app(label_settings(tmp_path / "corpus", tmp_path / "golden.jsonl"), say=lambda _: None)
    server = LabelServer(8552, app)
    server.start_background()
    driver = browser
    try:
        # the question box, pre-filled from the URL with a </textarea> breaker
        driver.get(f"{server.url}?q={quote(PAYLOADS[1] + ' zebra')}")  # type: ignore[attr-defined]
        box = driver.find_element(By.ID, "question")  # type: ignore[attr-defined]
        assert box.get_attribute("value") == PAYLOADS[1] + " zebra"
        _nothing_ran(driver)
        driver.find_element(By.CSS_SELECTOR, "#search-form button, #search-form [type=submit]"
                            ).click()  # type: ignore[attr-defined]
        WebDriverWait(driver, 60).until(ec.presence_of_element_located(
            (By.CSS_SELECTOR, "#bm25-results .snippet")))
        results = driver.find_element(By.ID, "bm25-results")  # type: ignore[attr-defined]
        assert "<script>window.__pwned='script'</script>" in results.text
        _nothing_ran(driver)
        for link in results.find_elements(By.CSS_SELECTOR, "a[href^='/doc/']"):
            href = link.get_attribute("href")
            if "evil" in href:
                driver.get(href)  # type: ignore[attr-defined]
                _nothing_ran(driver)
                assert "window.__pwned" in driver.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
                break
        else:
            pytest.fail("no link to the hostile document in the results")
    finally:
        server.shutdown()
        server.server_close()
