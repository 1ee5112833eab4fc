"""The synthetic smell of a question: how many of its words it borrowed from its evidence.

A question written by someone looking at the passage (a generator, a crowdworker) reuses the
passage's words; a question from a user's log uses the user's words. The share of a question's
content words that occur in its evidence is therefore a cheap, label-free measure of how much a
golden set flatters lexical retrieval: the seed's warning about synthetic questions, measured.

Content words are the BM25 tokenisation's (lowercased ``\\w+`` tokens minus the English stop
words), compared exactly: no stemming, so ``refund`` and ``refunds`` are different words. That
makes the measure conservative (it under-reads borrowing across inflections) and identical to
what BM25 itself can match.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sweep.retrieval.bm25 import ENGLISH_STOPWORDS, tokenize


def content_words(text: str, stopwords: frozenset[str] = ENGLISH_STOPWORDS) -> frozenset[str]:
    """The distinct content words of ``text`` (BM25's tokenisation, stop words removed)."""
    return frozenset(tokenize(text, stopwords))


def synthetic_smell(question: str, evidence_texts: Sequence[str],
                    stopwords: frozenset[str] = ENGLISH_STOPWORDS) -> float | None:
    """The share of the question's distinct content words that occur in its evidence.

    ``|W(q) ∩ W(e_1 ∪ … ∪ e_n)| / |W(q)|`` where ``W`` is :func:`content_words`. 1.0 means
    every content word of the question appears in the evidence; 0.0 means none does. ``None``
    when the question has no content word or there is no evidence text to compare with: such
    an item has no smell to report, and averaging it in as 0 would flatter the set.
    """
    q_words = content_words(question, stopwords)
    if not q_words:
        return None
    texts = [t for t in evidence_texts if t]
    if not texts:
        return None
    e_words: set[str] = set()
    for text in texts:
        e_words.update(tokenize(text, stopwords))
    return len(q_words & e_words) / len(q_words)


def mean_smell(values: Iterable[float | None]) -> tuple[float | None, int]:
    """The mean of the defined smells and how many were defined (``None`` ones are left out
    and counted apart, never averaged in as zero)."""
    defined = [v for v in values if v is not None]
    if not defined:
        return None, 0
    return sum(defined) / len(defined), len(defined)
