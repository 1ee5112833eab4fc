"""The embedded boundaries: semantic cuts on a two-topic text, the cluster DP by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sweep.chunking.chunkers import ChunkSpec
from sweep.chunking.semantic import (
    SemanticParams,
    best_grouping,
    chunk_corpus_embedded,
    cluster_spans,
    semantic_spans,
)
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.common.errors import SweepError
from sweep.data.corpus import parse_document

REGEX = RegexTokenizer()
CATS = ("cat", "cats", "kitten", "purr", "whiskers", "litter")
ROCKETS = ("rocket", "rockets", "orbit", "launch", "fuel", "engine")


def topic_embed(texts: list[str]) -> np.ndarray:
    """A fake model: (cat words, rocket words, 0.1) counts, so two cat sentences are alike."""
    rows = []
    for t in texts:
        words = [w.strip(".,!?").lower() for w in t.split()]
        rows.append([sum(w in CATS for w in words), sum(w in ROCKETS for w in words), 0.1])
    return np.array(rows, dtype=float)


CAT_PART = ("My cat likes to purr. The kitten has long whiskers. Cats need a clean litter "
            "box. A cat sleeps most of the day. ")
ROCKET_PART = ("The rocket engine burns fuel. A launch puts rockets in orbit. The engine "
               "needs more fuel. Every launch is loud.")
TWO_TOPICS = CAT_PART + ROCKET_PART


def _doc(text: str, path: str = "t.md"):
    return parse_document(path, text)


def test_semantic_cuts_at_the_change_of_topic() -> None:
    doc = _doc(TWO_TOPICS)
    starts = REGEX.token_starts(doc.text)
    # 7 gaps; 90th percentile of the drops: only the biggest one (cat -> rocket) is cut.
    spans = semantic_spans(doc, starts, 500, SemanticParams(window=1, threshold=90), topic_embed)
    assert [doc.text[a:b] for a, b in spans] == [CAT_PART.strip(), ROCKET_PART.strip()]


def test_semantic_windows_see_the_same_cut() -> None:
    doc = _doc(TWO_TOPICS)
    starts = REGEX.token_starts(doc.text)
    spans = semantic_spans(doc, starts, 500, SemanticParams(window=2, threshold=90), topic_embed)
    assert spans[0] == (0, len(CAT_PART.strip()))


def test_semantic_keeps_the_size_limit_and_exact_spans() -> None:
    doc = _doc(TWO_TOPICS)
    starts = REGEX.token_starts(doc.text)
    spec = ChunkSpec("semantic", 12, 0)
    chunks = chunk_corpus_embedded([doc], spec, SemanticParams(window=1, threshold=90),
                                   [starts], topic_embed)
    assert all(c.n_tokens <= 12 for c in chunks)
    assert all(c.text == doc.text[c.start : c.end] for c in chunks)
    # The topic change is still a cut: no chunk holds both cat and rocket words.
    for c in chunks:
        v = topic_embed([c.text])[0]
        assert v[0] == 0 or v[1] == 0, c.text
    # Nothing lost: every non-blank character is in a chunk.
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(doc.text) if not ch.isspace())


def test_semantic_never_crosses_a_heading() -> None:
    text = "# Cats\n\nMy cat likes to purr. The kitten purrs.\n\n## Also cats\n\nCats purr."
    doc = _doc(text)
    starts = REGEX.token_starts(doc.text)
    spans = semantic_spans(doc, starts, 500, SemanticParams(window=1, threshold=100),
                           topic_embed)
    heading = text.index("## Also")
    assert all(not (a < heading < b) for a, b in spans)
    assert any(a == heading for a, _ in spans)


def test_one_topic_is_not_cut() -> None:
    doc = _doc(CAT_PART)
    starts = REGEX.token_starts(doc.text)
    same = lambda texts: np.ones((len(texts), 3))  # noqa: E731 - every drop is 0
    assert semantic_spans(doc, starts, 500, SemanticParams(window=1, threshold=50), same) == [
        (0, len(CAT_PART.strip()))]


def test_bad_params_and_overlap_fail() -> None:
    with pytest.raises(SweepError, match=r"chunk\.semantic\.threshold"):
        SemanticParams(threshold=120).validate()
    with pytest.raises(SweepError, match=r"chunk\.overlap"):
        chunk_corpus_embedded([_doc("a.")], ChunkSpec("cluster", 10, 2), SemanticParams(),
                              [REGEX.token_starts("a.")], topic_embed)


# --------------------------------------------------------------------------- cluster DP

SIM = np.array([[1.0, 0.9, 0.1, 0.1],
                [0.9, 1.0, 0.2, 0.1],
                [0.1, 0.2, 1.0, 0.8],
                [0.1, 0.1, 0.8, 1.0]])


def test_grouping_by_hand() -> None:
    # Off-diagonal mean: (0.9 + 0.1 + 0.1 + 0.2 + 0.1 + 0.8) / 6 = 0.3667.
    # {AB}{CD}: (0.9 - .3667) + (0.8 - .3667) = 0.967; {ABCD}: 2.2 - 6 * .3667 = 0;
    # {ABC}{D}: 1.2 - 3 * .3667 = 0.1; singletons: 0.
    assert best_grouping(SIM, lambda i, j: True) == [(0, 2), (2, 4)]
    # At most two pieces per group: the same answer.
    assert best_grouping(SIM, lambda i, j: j - i <= 2) == [(0, 2), (2, 4)]
    # Singletons only.
    assert best_grouping(SIM, lambda i, j: j - i == 1) == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_grouping_with_a_low_baseline_prefers_big_groups() -> None:
    # Baseline 0: every pair adds, so the whole run is one group (2.2 > 0.9 + 0.8).
    assert best_grouping(SIM, lambda i, j: True, baseline=0.0) == [(0, 4)]
    # Baseline 0.85: only the A-B pair (0.9) pays; C-D (0.8) would cost 0.05.
    assert best_grouping(SIM, lambda i, j: True, baseline=0.85) == [(0, 2), (2, 3), (3, 4)]


def test_grouping_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(1, 8))
        v = rng.normal(size=(n, 4))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        sim = v @ v.T
        limit = int(rng.integers(1, 4))
        got = best_grouping(sim, lambda i, j, limit=limit: j - i <= limit, baseline=0.1)

        def score(groups: list[tuple[int, int]], sim: np.ndarray = sim) -> float:
            return sum(sim[a, b] - 0.1 for i, j in groups for a in range(i, j)
                       for b in range(a + 1, j))

        best = -np.inf
        for mask in range(2 ** (n - 1)):  # every set of cut points
            cuts = [0, *[k + 1 for k in range(n - 1) if mask >> k & 1], n]
            groups = list(itertools.pairwise(cuts))
            if all(j - i <= limit for i, j in groups):
                best = max(best, score(groups))
        assert score(got) == pytest.approx(best)


def test_cluster_groups_pieces_by_topic() -> None:
    doc = _doc(TWO_TOPICS)
    starts = REGEX.token_starts(doc.text)
    # Pieces of <= 8 tokens (one sentence each), groups up to 100 tokens.
    spans = cluster_spans(doc, starts, 100, SemanticParams(piece_tokens=8), topic_embed)
    assert [doc.text[a:b] for a, b in spans] == [CAT_PART.strip(), ROCKET_PART.strip()]
    small = cluster_spans(doc, starts, 15, SemanticParams(piece_tokens=8), topic_embed)
    assert all(REGEX.token_starts(doc.text[a:b]).size <= 15 for a, b in small)
    assert all(topic_embed([doc.text[a:b]])[0][:2].min() == 0 for a, b in small)


class _FakeEmbedder:
    """What `chunks_for` needs of an `Embedder`: a fingerprint and `encode`."""

    def __init__(self, fingerprint: str) -> None:
        self.fingerprint = fingerprint
        self.calls = 0

    def encode(self, texts: list[str], *, progress: bool = True) -> np.ndarray:
        self.calls += 1
        return topic_embed(texts)


def test_pipeline_memoises_by_the_cutting_models_fingerprint() -> None:
    from sweep.pipeline import memo

    memo.clear_memo()
    docs = [_doc(TWO_TOPICS)]
    spec = ChunkSpec("semantic", 500, 0)
    params = SemanticParams(window=1, threshold=90)
    a, b = _FakeEmbedder("model-a"), _FakeEmbedder("model-b")
    first = memo.chunks_for(docs, "fp", spec, "regex", params, a)
    assert [c.text for c in first] == [CAT_PART.strip(), ROCKET_PART.strip()]
    assert memo.chunks_for(docs, "fp", spec, "regex", params, a) is first
    assert a.calls == 1  # one document, one batch of windows, then memoised
    memo.chunks_for(docs, "fp", spec, "regex", params, b)
    assert b.calls == 1  # another model cuts anew
    memo.chunks_for(docs, "fp", spec, "regex", SemanticParams(window=2, threshold=90), a)
    assert a.calls == 2
    # 8 sentences, window 1: the 8 single sentences are the distinct window texts.
    assert memo.cut_texts("fp", spec, "regex", params, a) == 8
    memo.clear_memo()


def test_one_embedding_call_per_document() -> None:
    text = "# A\n\n" + CAT_PART + "\n\n## B\n\n" + ROCKET_PART + "\n\n## C\n\n" + CAT_PART
    doc = _doc(text)
    calls: list[int] = []

    def counting(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return topic_embed(texts)

    spans = semantic_spans(doc, REGEX.token_starts(doc.text), 500,
                           SemanticParams(window=1, threshold=50), counting)
    assert len(calls) == 1
    assert all(not (a < text.index("## B") < b) for a, b in spans)
