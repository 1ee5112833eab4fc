"""The Homebrew questions (tests/data/homebrew_golden.jsonl) resolve exactly in the real docs.

Their evidence is quotes, not chunk ids, so they survive every chunking; this checks each quote
is found verbatim, once, in the file it names, and that the answer is in the evidence.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import SHARED_DATA
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden, require_valid
from sweep.evaluation.relevance import CorpusIndex, resolve_all

GOLDEN = Path(__file__).parents[1] / "data" / "homebrew_golden.jsonl"
DOCS = SHARED_DATA / "homebrew_docs" / "docs"

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not (DOCS / "FAQ.md").is_file(),
                       reason=f"Homebrew docs not found at {DOCS} (../shared/data is absent)"),
]


def test_every_quote_resolves_in_the_homebrew_docs() -> None:
    golden = require_valid(load_golden(GOLDEN))
    assert len(golden.items) >= 8
    docs = load_corpus(DOCS)
    resolved = resolve_all(golden.items, CorpusIndex(docs), None, str(GOLDEN))
    text = {d.doc_id: d.text for d in docs}
    for r in resolved:
        assert not [p for p in r.problems if p.severity == "error"], r.problems
        assert len(r.spans) == len(r.item.evidence), r.item.qid
        for (doc_id, a, b), ref in zip(r.spans, r.item.evidence, strict=True):
            assert text[doc_id][a:b] == ref.quote
            assert text[doc_id].count(ref.quote) == 1, f"{r.item.qid}: quote is ambiguous"
        evidence = " ".join(text[d][a:b] for d, a, b in r.spans)
        # The answer is in the evidence or right next to it (the command under the sentence).
        doc = text[r.spans[0][0]]
        around = doc[max(0, r.spans[0][1] - 300): r.spans[-1][2] + 300]
        for mention in r.item.answer_must_mention:
            assert mention in evidence or mention in around, (r.item.qid, mention)
