"""The golden set's audit on a hand-made corpus: every finding worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import parse_document
from sweep.data.golden import EvidenceRef, GoldenItem
from sweep.evaluation.audit import AuditSpec, audit, duplicate_pairs, normalise_question
from sweep.evaluation.relevance import CorpusIndex, resolve_all

REFUNDS = ("# Refunds\n\nReturns are accepted within 30 days of delivery.\n\n"
           "## Exceptions\n\nSale items are final.\n")
FAQ = ("# FAQ\n\nReturns are accepted within 30 days of delivery.\n\n"
       "## Shipping\n\nParcels ship on Mondays.\n")
LONELY = "# Lonely\n\nNobody asks about this page.\n"
DOCS = [parse_document("refunds.md", REFUNDS), parse_document("faq.md", FAQ),
        parse_document("lonely.md", LONELY)]
CORPUS = CorpusIndex(DOCS)


def _chunk(doc: str, ordinal: int, start: int, end: int) -> Chunk:
    return Chunk(f"{doc}#{ordinal}", doc, ordinal, start, end, "", "", 5)


# the reference chunking: refunds cut in the middle of its first sentence
CUT = REFUNDS.index("within")
CHUNKS = [_chunk("refunds", 0, 0, CUT), _chunk("refunds", 1, CUT, len(REFUNDS)),
          _chunk("faq", 0, 0, len(FAQ)), _chunk("lonely", 0, 0, len(LONELY))]

ITEMS = [
    # the returns sentence: in refunds (split by the cut) and verbatim in faq: ambiguous
    GoldenItem("q1", "How long are returns accepted?", line=1, evidence=(
        EvidenceRef(doc_id="refunds", quote="Returns are accepted within 30 days of delivery."),)),
    # the same question, another case and punctuation: a text duplicate of q1
    GoldenItem("q2", "  how long are RETURNS accepted ", line=2, evidence=(
        EvidenceRef(doc_id="refunds", quote="Sale items are final."),)),
    # two passages in two documents, needs all by default; words the evidence does not hold
    GoldenItem("q3", "do parcels ship monday and are discounted goods refundable?", line=3,
               evidence=(EvidenceRef(doc_id="faq", quote="Parcels ship on Mondays."),
                         EvidenceRef(doc_id="refunds", quote="Sale items are final.")),
               extra={"source": "log"}),
]


@pytest.fixture(scope="module")
def report():
    resolved = resolve_all(ITEMS, CORPUS, None)
    # q1 and q3 close in embedding space (cosine 0.96), q2 orthogonal to both
    vecs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.96, 0.0, 0.28]])
    return audit(resolved, DOCS, CHUNKS, vecs, AuditSpec(dup_threshold=0.95))


def test_normalise_question() -> None:
    assert normalise_question(' "How long?!" ') == "how long"
    assert normalise_question("ﬁle  SIZE.") == "file size"  # NFKC folds the ligature


def test_duplicates_by_text_and_embedding(report) -> None:
    items = {i["qid"]: i for i in report["items"]}
    assert items["q1"]["near_duplicates"] == [
        {"qid": "q2", "similarity": 1.0, "how": "text"},
        {"qid": "q3", "similarity": 0.96, "how": "embedding"}]
    assert items["q2"]["near_duplicates"] == [{"qid": "q1", "similarity": 1.0, "how": "text"}]
    nd = report["set"]["near_duplicates"]
    assert (nd["n_pairs"], nd["n_items"], nd["n_text"], nd["threshold"]) == (2, 3, 1, 0.95)


def test_duplicate_pairs_blocks_agree_with_one_matrix() -> None:
    rnd = np.random.default_rng(3)
    vecs = rnd.normal(size=(40, 4))
    questions = [f"q{i}" for i in range(40)]
    whole = duplicate_pairs(questions, vecs, 0.8, block=1024)
    assert whole == duplicate_pairs(questions, vecs, 0.8, block=7)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = unit @ unit.T
    expected = {(i, j) for i in range(40) for j in range(i + 1, 40) if sims[i, j] >= 0.8}
    assert {(i, j) for i, j, _, _ in whole} == expected and expected


def test_evidence_in_several_places(report) -> None:
    items = {i["qid"]: i for i in report["items"]}
    [found] = items["q1"]["evidence_elsewhere"]
    at = FAQ.index("Returns are accepted")
    assert found["occurrences"] == 2 and found["others"] == [{"doc_id": "faq", "start": at}]
    assert items["q3"]["evidence_elsewhere"] == []
    assert report["set"]["n_evidence_elsewhere"] == 1


def test_split_across_reference_chunks(report) -> None:
    items = {i["qid"]: i for i in report["items"]}
    assert items["q1"]["split"] == [{"passage": 0, "n_chunks": 2,
                                     "chunk_ids": ["refunds#0", "refunds#1"]}]
    assert items["q3"]["split"] == [] and report["set"]["n_split"] == 1


def test_smell_and_passages(report) -> None:
    items = {i["qid"]: i for i in report["items"]}
    # q1: returns, long, accepted ("how", "are" are stop words): all but "long" in the evidence
    assert items["q1"]["smell"] == pytest.approx(2 / 3)
    assert items["q2"]["smell"] == 0.0  # none of them in "Sale items are final."
    # q1's paragraph is its sentence; q3's: "Sale items are final." and "Parcels ship on
    # Mondays." are whole paragraphs too
    assert items["q1"]["smell_paragraph"] == items["q1"]["smell"]
    assert items["q3"]["smell_paragraph"] == pytest.approx(2 / 6)
    # q3: parcels ship monday discounted goods refundable -> parcels, ship in the evidence
    assert items["q3"]["smell"] == pytest.approx(2 / 6)
    assert (items["q3"]["n_passages"], items["q3"]["passages_needed"]) == (2, 2)
    s = report["set"]
    assert s["smell_mean"] == pytest.approx((2 / 3 + 0 + 1 / 3) / 3) and s["smell_n"] == 3
    assert s["passages_needed"] == {"1": 2, "2": 1, "3plus": 0}
    assert s["smell_by_source"]["log"] == {"mean": pytest.approx(1 / 3), "n": 1, "items": 1,
                                           "mean_paragraph": pytest.approx(1 / 3)}
    assert s["smell_by_source"]["unspecified"]["n"] == 2


def test_paragraph_smell_reads_around_a_short_span() -> None:
    doc = parse_document("p.md", "# T\n\nThe warranty lasts two years for devices.\n\nOther.\n")
    item = GoldenItem("q", "how long is the devices warranty?", line=1,
                      evidence=(EvidenceRef(doc_id="p", quote="two years"),))
    [row] = audit(resolve_all([item], CorpusIndex([doc]), None), [doc], [])["items"]
    # content words: long, devices, warranty; "two years" holds none, its paragraph two
    assert row["smell"] == 0.0 and row["smell_paragraph"] == pytest.approx(2 / 3)


def test_coverage(report) -> None:
    cov = report["set"]["coverage"]
    assert cov["untouched_documents"] == ["lonely"]
    assert (cov["documents"], cov["documents_touched"]) == (3, 2)
    untouched = {(s["doc_id"], tuple(s["heading_path"])) for s in cov["untouched_sections"]}
    # refunds: both sections hold evidence; faq: only "Shipping"; lonely: none
    assert untouched == {("faq", ("FAQ",)), ("lonely", ("Lonely",))}
    assert cov["sections"] == 5 and cov["sections_touched"] == 3


def test_no_vectors_means_text_duplicates_only() -> None:
    resolved = resolve_all(ITEMS, CORPUS, None)
    report = audit(resolved, DOCS, CHUNKS, None)
    assert report["set"]["near_duplicates"]["n_pairs"] == 1
