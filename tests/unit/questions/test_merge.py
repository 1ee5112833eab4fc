"""Normalisation, cids, feedback words and ratings, exact merging while reading, and
near-duplicate leader clustering on hand-made vectors."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from sweep.questions.merge import (
    Candidate,
    Merger,
    cid_of,
    default_negative_below,
    feedback_kind,
    merge_near,
    near_groups,
    normalise,
    settle,
)
from sweep.questions.rows import Row


@pytest.mark.parametrize(("raw", "norm"), [
    ("  How do I  reset\tmy password?? ", "how do i reset my password"),
    ("\u201cWhat is BM25?\u201d", "what is bm25"),
    ("'quoted.'", "quoted"),
    ("Ｆｕｌｌｗｉｄｔｈ!", "fullwidth"),  # NFKC
    ("STRASSE", "strasse"),
    ("Straße", "strasse"),  # casefold, not lower
])
def test_normalise(raw: str, norm: str) -> None:
    assert normalise(raw) == norm


def test_cid_is_the_agreed_hash() -> None:
    expected = "c-" + hashlib.sha256(b"how do i reset my password").hexdigest()[:12]
    assert cid_of("How do I reset my password?") == expected
    assert cid_of("how do i reset my password") == expected


@pytest.mark.parametrize(("value", "kind"), [
    ("down", ("negative", None)), ("Thumbs Down", ("negative", None)),
    ("thumbs-down", ("negative", None)), ("👎", ("negative", None)), ("BAD", ("negative", None)),
    ("0", ("negative", None)), ("false", ("negative", None)), (False, ("negative", None)),
    ("no", ("negative", None)), ("up", ("positive", None)), ("👍", ("positive", None)),
    (True, ("positive", None)), ("4", (None, 4.0)), (2.5, (None, 2.5)), ("meh", (None, None)),
])
def test_feedback_vocabulary(value: object, kind: tuple) -> None:
    assert feedback_kind(value) == kind


def test_default_threshold_is_the_bottom_of_the_scale() -> None:
    assert default_negative_below(5.0) == 1.0
    assert default_negative_below(1.0) == 0.0
    assert default_negative_below(None) == 0.0


def row(q: str, fb: list | None = None, t: str | None = None, src: str = "log",
        ref: str = "f:1", trace: str | None = None) -> Row:
    return Row(question=q, source=src, source_ref=ref, time=t, feedback=fb or [],
               trace_id=trace)


def test_exact_merging_keeps_counts_feedback_times_and_phrasings() -> None:
    m = Merger()
    m.add(row("How do I reset my password?", ["down"], "2024-05-02T00:00:00Z", ref="f:2"))
    m.add(row("how do i reset my password", [], "2024-05-01T00:00:00Z", ref="f:3"))
    m.add(row("How do I reset my password?", ["2"], "2024-05-03T00:00:00Z"))
    m.add(row("How do I reset my password?", ["5"]))
    m.add(row("   "))
    m.add(row("other", ["meh"]))
    assert m.tally.rows_read == 6 and m.tally.rows_empty == 1 and m.tally.rows_kept == 5
    assert m.tally.merged_exact == 3
    assert m.tally.feedback_unrecognised == 1 and m.tally.unrecognised_examples == ["meh"]
    cands = list(m.by_cid.values())
    settle(cands, default_negative_below(m.tally.ratings_max))  # ratings up to 5: 1-5 scale
    c = m.by_cid[cid_of("how do i reset my password")]
    assert c.count == 4
    assert c.negative_count == 1  # "down"; 2 and 5 are above 1
    assert c.positive_count == 2
    assert c.feedback == "negative"
    assert c.question == "How do I reset my password?"  # the most frequent phrasing
    assert c.variants == ["how do i reset my password"]
    assert (c.first_seen, c.last_seen) == ("2024-05-01T00:00:00Z", "2024-05-03T00:00:00Z")
    assert c.source_ref == "f:2"


def test_threshold_given_counts_ratings_at_or_below() -> None:
    m = Merger()
    for v in ("1", "2", "3", "4"):
        m.add(row("q", [v]))
    settle(list(m.by_cid.values()), 2.0)
    c = m.by_cid[cid_of("q")]
    assert (c.negative_count, c.positive_count) == (2, 2)


def test_redaction_happens_before_merging_and_is_counted() -> None:
    m = Merger()
    m.add(row("refund for jane@example.com?"))
    m.add(row("refund for bob@example.org?"))  # the same question once the address is gone
    m.add(row("refund for bob@example.org?"))  # remembered: still counted
    assert list(m.by_cid) == [cid_of("refund for [email]")]
    assert m.tally.redactions["email"] == 3
    raw = Merger(redact=False)
    raw.add(row("refund for jane@example.com?"))
    assert next(iter(raw.by_cid.values())).question == "refund for jane@example.com?"


def test_decided_cids_are_skipped_and_counted() -> None:
    m = Merger(skip={cid_of("done")}.__contains__)
    m.add(row("Done?"))
    m.add(row("new"))
    assert m.tally.skipped_decided == 1 and list(m.by_cid) == [cid_of("new")]


def test_real_source_wins_over_synthetic_and_negative_trace_is_kept() -> None:
    m = Merger()
    m.add(row("q", src="synthetic", ref="doc:0-10"))
    m.add(row("q", src="trace", ref="tr-1", trace="tr-1"))
    m.add(row("q", ["down"], src="trace", ref="tr-2", trace="tr-2"))
    c = m.by_cid[cid_of("q")]
    assert (c.source, c.source_ref, c.trace_id) == ("trace", "tr-1", "tr-2")


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_near_groups_leader_clustering_by_hand() -> None:
    # a, b are 0.995 alike; c is 0.9 alike to b but 0.85 to a; d stands apart.
    a = unit(1, 0, 0)
    b = unit(0.995, np.sqrt(1 - 0.995**2), 0)
    vecs = np.stack([a, b, unit(0.85, 0.5268, 0), unit(0, 0, 1)])
    sims = vecs @ vecs.T
    assert sims[0, 1] > 0.99 and 0.84 < sims[0, 2] < 0.86 and sims[1, 2] > 0.88
    leader = near_groups(vecs, [0, 1, 2, 3], 0.88, [False] * 4, block=2)
    # b joins a; c is near b, but b is no leader, and a is below the threshold: c leads
    assert leader == [0, 0, 2, 3]


def test_fixed_candidates_always_lead() -> None:
    # 0 and 1 are near-identical but both already queued: neither absorbs the other; 2 joins
    # the more similar of the two (1)
    vecs = np.stack([unit(1, 0), unit(1, 0.01), unit(1, 0.02)])
    assert near_groups(vecs, [0, 1, 2], 0.9, [True, True, False]) == [0, 1, 1]


def test_merge_near_folds_counts_into_the_most_asked() -> None:
    cands = [Candidate("c-1", "reset password", count=2),
             Candidate("c-2", "reset my password", count=5, negative_count=1),
             Candidate("c-3", "ship to canada", count=1)]
    vecs = np.stack([unit(1, 0.05), unit(1, 0), unit(0, 1)])
    kept, merged = merge_near(cands, vecs, 0.9)
    assert merged == 1
    assert [c.cid for c in kept] == ["c-2", "c-3"]
    assert kept[0].count == 7 and kept[0].negative_count == 1
    assert kept[0].variants == ["reset password"]
