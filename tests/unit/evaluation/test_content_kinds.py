"""Scores by the kind of content (issue 47): the markdown classifier on hand-made text, the
same kinds read off HTML and Word files through their parsers, and the per-kind split equal
to the mean over the filtered questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.data.parsers import get_parser, parse_file
from sweep.evaluation.content import (
    content_metrics,
    line_kinds,
    parse_metric,
    question_kind,
    score_by_content,
    span_kind,
)

MARKDOWN = """# Installing packages

apt fetches packages and their dependencies from the archive.

- apt is the high-level tool
- dpkg installs one .deb file
  and knows nothing of the archive

| tool | level |
| --- | --- |
| apt | high |

```sh
apt-get install coreutils
# not a heading: inside the fence
```

    indented code after a blank line

Setext title
------------
"""

# One span of each kind: the text it must sit in.
SPANS = {"heading": "Installing packages", "prose": "fetches packages and their",
         "list": "dpkg installs one .deb file", "table": "| apt | high |",
         "code": "apt-get install coreutils"}


def kind_of(text: str, needle: str) -> str:
    start = text.index(needle)
    return span_kind(line_kinds(text), start, start + len(needle))


def test_markdown_lines_get_their_block_s_kind() -> None:
    for kind, needle in SPANS.items():
        assert kind_of(MARKDOWN, needle) == kind, needle
    assert kind_of(MARKDOWN, "not a heading") == "code"
    assert kind_of(MARKDOWN, "and knows nothing") == "list"  # an item's continuation
    assert kind_of(MARKDOWN, "indented code") == "code"
    assert kind_of(MARKDOWN, "Setext title") == "heading"


# A DocBook caution as markitdown and trafilatura write it (the Debian Reference's HTML).
CALLOUTS = """| tool | level |
| --- | --- |
| apt | high |

|  |  |
| --- | --- |
| ![[Caution]](images/caution.png) | Caution |
| Encrypted data becomes inaccessible if its password is lost. |

|  | Note |
| --- | --- |
|  | Entire systems can be encrypted too. |
"""


def test_an_admonition_laid_out_as_a_table_is_prose() -> None:
    assert kind_of(CALLOUTS, "apt | high") == "table"
    assert kind_of(CALLOUTS, "Encrypted data becomes inaccessible") == "prose"
    assert kind_of(CALLOUTS, "Entire systems can be encrypted") == "prose"


def test_a_span_across_kinds_takes_the_kind_of_most_of_its_characters() -> None:
    lines = line_kinds(MARKDOWN)
    a = MARKDOWN.index("archive.")  # 8 characters of prose, then the whole first item
    b = MARKDOWN.index("- dpkg")
    assert span_kind(lines, a, b) == "list"
    assert span_kind(lines, a, a + 8) == "prose"
    # several spans of a question add up: 8 prose characters against 5 of a table cell
    t = MARKDOWN.index("high |")
    assert question_kind([("d", a, a + 8), ("d", t, t + 5)], {"d": lines}) == "prose"
    assert question_kind([], {"d": lines}) == "unknown"


HTML = b"""<html><head><title>t</title></head><body><main>
<h1>Installing packages</h1>
<p>apt fetches packages and their dependencies from the archive, which is a long sentence
so that the extractor keeps this paragraph as the main content of the page.</p>
<ul><li>apt is the high-level tool</li><li>dpkg installs one .deb file</li></ul>
<table><tr><th>tool</th><th>level</th></tr><tr><td>apt</td><td>high</td></tr></table>
<pre><code>apt-get install coreutils
# not a heading: inside the fence</code></pre>
<p>More prose follows the code block so that the page reads as an article to the extractor,
with another sentence or two about packages and the archive.</p>
</main></body></html>"""


@pytest.mark.parametrize("parser", ["trafilatura", "markitdown"])
def test_html_parsers_output_carries_the_kinds(parser: str) -> None:
    text = parse_file(HTML, "p.html", get_parser("html", parser))[0].text
    for kind, needle in {**SPANS, "table": "apt | high"}.items():
        assert kind_of(text, needle) == kind, (parser, needle, text)


def make_docx(path: Path) -> bytes:
    import docx

    d = docx.Document()
    d.add_heading("Installing packages", level=1)
    d.add_paragraph("apt fetches packages and their dependencies from the archive.")
    d.add_paragraph("dpkg installs one .deb file", style="List Bullet")
    table = d.add_table(rows=2, cols=2)
    for r, row in enumerate([("tool", "level"), ("apt", "high")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    d.save(path)
    return path.read_bytes()


@pytest.mark.parametrize("parser", ["python_docx", "markitdown"])
def test_word_parsers_output_carries_the_kinds(parser: str, tmp_path: Path) -> None:
    text = parse_file(make_docx(tmp_path / "k.docx"), "k.docx", get_parser("docx", parser)
                      )[0].text
    # Word has no code block style the parsers read: code is out of reach in a .docx
    for kind in ("heading", "prose", "list"):
        assert kind_of(text, SPANS[kind]) == kind, (parser, kind, text)
    assert kind_of(text, "apt | high") == "table", text


def test_the_split_is_the_mean_over_the_filtered_rows() -> None:
    rows = [
        {"qid": "1", "status": "scored", "content_kind": "table", "recall_at_5": 1.0, "mrr": 1.0},
        {"qid": "2", "status": "scored", "content_kind": "table", "recall_at_5": 0.0, "mrr": 0.25},
        {"qid": "3", "status": "scored", "content_kind": "prose", "recall_at_5": 1.0, "mrr": 0.5},
        {"qid": "4", "status": "orphan", "content_kind": "code"},
        {"qid": "5", "status": "scored", "content_kind": "code", "recall_at_5": 0.5},
    ]
    split = score_by_content(rows, ["recall_at_5", "mrr"])
    assert list(split) == ["prose", "table", "code"]  # KINDS order; no list, no heading
    assert split["table"] == {"n": 2, "n_scored": 2,
                              "metrics": {"recall_at_5": 0.5, "mrr": 0.625}}
    assert split["code"] == {"n": 2, "n_scored": 1, "metrics": {"recall_at_5": 0.5}}
    flat = content_metrics(split)
    assert flat["by_content/table/recall_at_5"] == 0.5
    assert flat["by_content/table/n"] == 2.0 and flat["by_content/code/n"] == 1.0
    assert "by_content/code/mrr" not in flat  # no row of code holds it: no 0 averaged in
    assert parse_metric("by_content/table/recall_at_5") == ("table", "recall_at_5")
    assert parse_metric("by_source/log/recall_at_5") is None
