"""`sweep label` on a PDF in a real headless browser: the page markers show "page N" and take
no part in the text, so a selection across a page break becomes the parser's exact span, the
evidence says "pages 1-2", and the saved quote is the parser's text (it resolves exactly in a
run with the same parser). Chromium as in test_label_browser.py (`make browser`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import running_label_server
from pdfgen import make_pdf

pytestmark = pytest.mark.slow

PAGES = [
    [(14, True, "1 Links"), (10, False, "There are two methods of associating a file name.")],
    [(10, False, "A hard link is a duplicate name for an existing file.")],
    [(14, True, "2 Permissions"), (10, False, "The sticky bit protects files in a shared folder.")],
]


@pytest.fixture
def pdf_label_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "book.pdf").write_bytes(make_pdf(PAGES))
    (corpus / "cats.md").write_text("# Cats\n\nCats sleep most of the day.\n")
    (corpus / "dogs.md").write_text("# Dogs\n\nDogs like a walk in the morning.\n")
    golden = tmp_path / "golden.jsonl"
    with running_label_server(["--no-dense", "--corpus", str(corpus), "--golden",
                               str(golden), "tracking=off", f"cache.dir={tmp_path}/cache"],
                              tmp_path) as url:
        yield url, golden


# Select from the start of `first` to the end of `last` in the document view, as a mouse
# drag would; returns what the selection reads (what a copy takes).
SELECT_JS = """
const box = document.querySelector('#doc-view .doc-text.full');
const [first, last] = [arguments[0], arguments[1]];
const a = box.textContent.indexOf(first), b = box.textContent.indexOf(last) + last.length;
if (a < 0 || b < last.length) return null;
const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
const range = document.createRange();
let pos = 0, node, startSet = false;
while ((node = walker.nextNode())) {
  const len = node.data.length;
  if (!startSet && a < pos + len) { range.setStart(node, a - pos); startSet = true; }
  if (startSet && b <= pos + len) { range.setEnd(node, b - pos); break; }
  pos += len;
}
const sel = window.getSelection();
sel.removeAllRanges();
sel.addRange(range);
return sel.toString();
"""


def _wait(driver: object, condition: object, timeout: float = 60) -> object:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def test_a_selection_across_a_page_break_saves_the_parsers_text(
        pdf_label_server: tuple[str, Path], browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    from sweep.data.corpus import load_corpus

    url, golden = pdf_label_server
    (doc,) = [d for d in load_corpus(golden.parent / "corpus", cache_dir=golden.parent / "cache")
              if d.source == "book.pdf"]
    driver = browser
    driver.get(url)
    driver.find_element(By.ID, "question").send_keys("what is a hard link to a file name")
    driver.find_element(By.ID, "search").click()
    hit = _wait(driver, ec.presence_of_element_located(
        (By.CSS_SELECTOR, '#bm25-results a.open[data-source="book.pdf"]')))
    where = hit.find_element(By.XPATH, "../..").find_element(By.CSS_SELECTOR, ".where").text
    assert "pages 1\u20133" in where  # the book is one chunk
    hit.click()
    _wait(driver, ec.presence_of_element_located(
        (By.CSS_SELECTOR, '#doc-view .doc-text.full[data-doc="book"]')))
    # The view's text is the parser's text; each marker shows "page N" by CSS only.
    assert driver.execute_script(
        "return document.querySelector('#doc-view .doc-text.full').textContent") == doc.text
    labels = driver.execute_script(
        "return [...document.querySelectorAll('#doc-view .pg')].map("
        "m => getComputedStyle(m, '::before').content)")
    assert labels == ['"page 1"', '"page 2"', '"page 3"']
    # Page 2 is rendered below page 1's text (a visible break, not only a DOM node).
    tops = driver.execute_script(
        "return [...document.querySelectorAll('#doc-view .pg')].map("
        "m => m.getBoundingClientRect().top)")
    assert tops[0] < tops[1] < tops[2]

    copied = driver.execute_script(SELECT_JS, "associating a file name.", "A hard link")
    a = doc.text.index("associating a file name.")
    b = doc.text.index("A hard link") + len("A hard link")
    assert copied == doc.text[a:b] and "page" not in copied  # no marker text in a copy
    button = driver.find_element(By.ID, "add-evidence")
    _wait(driver, lambda d: button.is_enabled())
    button.click()
    item = _wait(driver, ec.presence_of_element_located(
        (By.CSS_SELECTOR, "#evidence-list li.evidence")))
    _wait(driver, lambda d: "pages 1\u20132" in item.text)
    driver.find_element(By.ID, "save").click()
    _wait(driver, lambda d: "Saved q" in d.find_element(By.ID, "status").text)
    assert "Evidence on book.pdf pages 1\u20132." in driver.find_element(By.ID, "status").text
    (line,) = golden.read_text(encoding="utf-8").splitlines()
    (ev,) = json.loads(line)["evidence"]
    assert ev == {"path": "book.pdf", "quote": doc.text[a:b]}  # exact under this parser

    driver.get(url + "items")
    row = _wait(driver, ec.presence_of_element_located((By.CSS_SELECTOR, "#items tbody tr")))
    assert "found on book.pdf pages 1\u20132" in row.text
