"""`sweep label` end to end in a real headless browser (Debian's chromium + Selenium).

A `sweep label` process (real BM25, real dense model) serves a copy of the demo; the browser
types a question, searches, opens two documents, selects one passage in each with the
Selection API, adds each with a real click on "Add selection as evidence", takes a suggested
mention, types another, saves, and the test reads the exact line appended to the golden file.
Then it edits that item from the list view and deletes it, and the file is as it was.

Chromium is installed by `make browser` (a prerequisite of `make test-slow`); when it is
missing this test FAILS rather than skips, so CI cannot pass without running it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import DEMO, running_label_server

pytestmark = pytest.mark.slow

SCREENSHOT_COPY = Path("/tmp/label-screenshot.png")

QUESTION = "my thermostat died after 5 weeks, do i get a refund or only a warranty repair?"
QUOTE_1 = ("You can return most Kestrel Home products within 30 days of delivery for a full "
           "refund of the item price.")
QUOTE_2 = "The standard warranty period is two years for devices and one year for accessories."


@pytest.fixture
def label_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`sweep label` on a copy of the demo, on a free port; yields (url, golden path)."""
    work = tmp_path / "demo"
    shutil.copytree(DEMO / "corpus", work / "corpus")
    shutil.copy(DEMO / "golden.jsonl", work / "golden.jsonl")
    shutil.copy(DEMO / "golden.reference.yaml", work / "golden.reference.yaml")
    with running_label_server(["--corpus", str(work / "corpus"), "--golden",
                               str(work / "golden.jsonl"), "tracking=off",
                               f"cache.dir={tmp_path}/cache"], tmp_path) as url:
        yield url, work / "golden.jsonl"


# Select `quote` inside the full document view with the Selection API, as a mouse would:
# the page hears the same `selectionchange` event.
SELECT_JS = """
const box = document.querySelector('#doc-view .doc-text.full');
const quote = arguments[0];
const at = box.textContent.indexOf(quote);
if (at < 0) return 'quote not in the document view';
const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
const range = document.createRange();
let pos = 0, node, startSet = false;
while ((node = walker.nextNode())) {
  const len = node.data.length;
  if (!startSet && at < pos + len) { range.setStart(node, at - pos); startSet = true; }
  if (startSet && at + quote.length <= pos + len) { range.setEnd(node, at + quote.length - pos); break; }
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


def _expected_chunk_ids(corpus: Path) -> list[str]:
    """The reference chunks holding each quote, computed apart from the page."""
    from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
    from sweep.chunking.tokenizers import load_chunk_tokenizer
    from sweep.data.corpus import load_corpus

    docs = {d.source: d for d in load_corpus(corpus)}
    chunks = chunk_corpus(list(docs.values()), ChunkSpec("heading", 256, 0, "none"),
                          load_chunk_tokenizer("minilm"))
    out = []
    for source, quote in (("returns/refund-policy.md", QUOTE_1),
                          ("warranty/warranty-terms.md", QUOTE_2)):
        doc = docs[source]
        start = doc.text.index(quote)
        out += [c.chunk_id for c in chunks if c.doc_id == doc.doc_id
                and c.start < start + len(quote) and start < c.end]
    return out


def test_label_one_question_with_two_passages(label_server: tuple[str, Path], browser: object,
                                              tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    url, golden = label_server
    before = golden.read_bytes()
    driver = browser
    driver.get(url)
    assert driver.title == "sweep label"

    driver.find_element(By.ID, "question").send_keys(QUESTION)
    driver.find_element(By.ID, "search").click()
    _wait(driver, ec.presence_of_element_located((By.CSS_SELECTOR, "#bm25-results .hit")))
    _wait(driver, ec.presence_of_element_located((By.CSS_SELECTOR, "#dense-results .hit")))
    assert len(driver.find_elements(By.CSS_SELECTOR, "#bm25-results .hit")) == 8
    assert len(driver.find_elements(By.CSS_SELECTOR, "#dense-results .hit")) == 8

    # A real mouse drag across a passage makes a selection the page can use.
    snippet = driver.find_element(By.CSS_SELECTOR, "#bm25-results .hit .snippet")
    # From the left of the passage's first line of text, half the box's width to the right
    # (offsets are from the snippet's centre).
    x, y = driver.execute_script("""
        const box = arguments[0].getBoundingClientRect();
        const line = arguments[0].querySelector('.chunk').getClientRects()[0];
        return [line.left + 2 - (box.left + box.width / 2),
                line.top + line.height / 2 - (box.top + box.height / 2)];""", snippet)
    ActionChains(driver).move_to_element_with_offset(snippet, int(x), int(y)).click_and_hold() \
        .move_by_offset(snippet.size["width"] // 2, 0).release().perform()
    _wait(driver, lambda d: d.find_element(By.ID, "add-evidence").is_enabled())
    assert driver.find_element(By.ID, "selection-preview").text.strip() not in (
        "", "(nothing selected)")
    driver.execute_script("window.getSelection().removeAllRanges()")

    # all/any means something only with several passages: the control shows from the second
    assert not driver.find_element(By.ID, "needs-row").is_displayed()
    for n, (source, quote) in enumerate((("returns/refund-policy.md", QUOTE_1),
                                         ("warranty/warranty-terms.md", QUOTE_2)), start=1):
        link = driver.find_element(By.CSS_SELECTOR, f'a.open[data-source="{source}"]')
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
        link.click()
        _wait(driver, ec.presence_of_element_located(
            (By.CSS_SELECTOR, f'#doc-view .doc-text.full[data-doc="{source[:-3]}"]')))
        # The document view holds the file's text verbatim (offsets are measured on it).
        text = driver.execute_script(
            "return document.querySelector('#doc-view .doc-text.full').textContent")
        assert text == (golden.parent / "corpus" / source).read_text(encoding="utf-8")
        assert driver.execute_script(SELECT_JS, quote) == quote
        button = driver.find_element(By.ID, "add-evidence")
        _wait(driver, lambda d, b=button: b.is_enabled())
        button.click()
        _wait(driver, lambda d, n=n: len(d.find_elements(By.CSS_SELECTOR,
                                                         "#evidence-list li.evidence")) == n)

    quotes = [q.text for q in driver.find_elements(By.CSS_SELECTOR, "#evidence-list blockquote")]
    assert quotes == [QUOTE_1, QUOTE_2]
    _wait(driver, lambda d: d.find_element(By.ID, "needs-row").is_displayed())
    assert driver.find_element(By.ID, "needs").get_attribute("value") == ""  # all, the default
    # "30 days" is suggested from the selection; "two years" is typed by hand.
    suggestion = _wait(driver, ec.element_to_be_clickable(
        (By.XPATH, "//span[contains(@class,'suggest') and normalize-space()='+ 30 days']")))
    suggestion.click()
    driver.find_element(By.ID, "mention-input").send_keys("two years")
    driver.find_element(By.ID, "add-mention").click()
    _wait(driver, lambda d: [c.text.rstrip("×").strip() for c in
                             d.find_elements(By.CSS_SELECTOR, "#mentions .chip")]
          == ["30 days", "two years"])
    # The demo's planted contradiction (faq.md still says 14 days) is flagged while labelling.
    _wait(driver, lambda d: "near-duplicate passage in faq.md" in d.find_element(
        By.ID, "warnings").text)
    assert driver.find_element(By.ID, "qid").get_attribute("value") == "q051"

    shot = tmp_path / "label.png"
    driver.save_screenshot(str(shot))
    shutil.copy(shot, SCREENSHOT_COPY)

    driver.find_element(By.ID, "save").click()
    _wait(driver, lambda d: "Saved q051" in d.find_element(By.ID, "status").text)
    status = driver.find_element(By.ID, "status").text
    assert "(line 61)" in status

    after = golden.read_bytes()
    assert after.startswith(before)  # earlier lines untouched, byte for byte
    new_lines = after[len(before):].decode("utf-8").splitlines()
    assert len(new_lines) == 1
    chunk_ids = _expected_chunk_ids(golden.parent / "corpus")
    assert chunk_ids == ["returns/refund-policy#2", "warranty/warranty-terms#3"]
    assert new_lines[0] == json.dumps({
        "qid": "q051", "question": QUESTION, "relevant_chunk_ids": chunk_ids,
        "answer_must_mention": ["30 days", "two years"],
        "evidence": [{"path": "returns/refund-policy.md", "quote": QUOTE_1},
                     {"path": "warranty/warranty-terms.md", "quote": QUOTE_2}]},
        ensure_ascii=False)

    # The saved item is valid for the project, and the list view shows that it resolves.
    from sweep.data.golden import load_golden

    assert not load_golden(golden).errors
    driver.get(url + "items")
    row = _wait(driver, ec.presence_of_element_located(
        (By.CSS_SELECTOR, 'tr[data-qid="q051"]')))
    assert "✓ evidence quotes" in row.text
    assert "tracking is off" in driver.find_element(By.ID, "ranks-note").text
    driver.save_screenshot(str(tmp_path / "items.png"))

    # Edit it from the list: the page reopens with its evidence; only the question changes.
    row.find_element(By.CSS_SELECTOR, "a.edit").click()
    _wait(driver, lambda d: "Editing q051 (line 61)" in d.find_element(By.ID, "mode").text)
    _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR,
                                                "#evidence-list li.evidence")) == 2)
    box = driver.find_element(By.ID, "question")
    box.clear()
    box.send_keys("thermostat broke after 5 weeks: refund or repair?")
    driver.find_element(By.ID, "save").click()
    _wait(driver, lambda d: "Saved q051" in d.find_element(By.ID, "status").text)
    edited = json.loads(golden.read_text(encoding="utf-8").splitlines()[-1])
    assert edited["question"] == "thermostat broke after 5 weeks: refund or repair?"
    assert edited["evidence"] == json.loads(new_lines[0])["evidence"]
    assert golden.read_bytes().startswith(before)

    # Delete it from the list (confirming the dialog): the file is exactly as it was.
    driver.get(url + "items")
    driver.find_element(By.CSS_SELECTOR, 'tr[data-qid="q051"] button.delete').click()
    _wait(driver, ec.alert_is_present()).accept()
    _wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, 'tr[data-qid="q051"]'))
    assert golden.read_bytes() == before
