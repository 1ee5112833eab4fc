"""Why our Cluster rows of Chroma's table differ: Chroma's own grouping, measured on its data.

chunk-sweep's ``chunk.boundary=cluster`` is the *idea* of Chroma's ClusterSemanticChunker
(pieces grouped by dynamic programming), with its own rules: pieces are whole sentences packed
to ``chunk.cluster.piece_tokens``, a group may hold up to ``chunk.size`` tokens, sections are
cut first. Chroma's chunker (chunking_evaluation/chunking/cluster_semantic_chunker.py, read
at commit d451fc4) differs in three ways this script reproduces, written from that reading:

* pieces: its RecursiveTokenChunker at 50 cl100k tokens, no overlap (our
  ``langchain_recursive`` boundary with Chroma's separators);
* a group holds at most ``size // 50`` pieces (5 for 250, 4 for 200), whatever their tokens;
* the score of a group is the sum of its block of the similarity matrix after subtracting the
  mean upper-triangle similarity and zeroing the diagonal; a longer group replaces a shorter
  one only when strictly better, and dp starts at 0, so while the running best is 0 at the
  start of a document, pieces fall into one group (``segmentation`` stays 0).

Its chunk is the pieces joined by a space, which Chroma's evaluation locates with its
whitespace-tolerant search: from the first piece's start to the last piece's end, one trailing
``.`` dropped, at the first occurrence. Precision_Ω is then computed with chunk-sweep's own
metric (``precision_omega``, Chroma's closed interval test) over the 472 questions.

    python benchmarks/chroma_cluster_check.py [--data DIR] [--cache DIR] [--sizes 250,200]

Needs the MiniLM vectors of ~7,000 pieces (cached in --cache). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PIECE_TOKENS = 50
PUBLISHED = {250: 28.6, 200: 33.6}


def chroma_segments(sim: np.ndarray, max_pieces: int) -> list[tuple[int, int]]:
    """Chroma's optimal segmentation of ``n`` pieces: inclusive ``(start, end)`` groups."""
    n = sim.shape[0]
    m = sim - np.mean(sim[np.triu_indices(n, k=1)]) if n > 1 else sim.copy()
    np.fill_diagonal(m, 0.0)
    dp = np.zeros(n)
    seg = np.zeros(n, dtype=int)
    for i in range(n):
        for size in range(1, max_pieces + 1):
            a = i - size + 1
            if a < 0:
                break
            value = float(m[a : i + 1, a : i + 1].sum()) + (dp[i - size] if i - size >= 0 else 0.0)
            if value > dp[i]:
                dp[i], seg[i] = value, a
    groups, i = [], n - 1
    while i >= 0:
        groups.append((int(seg[i]), i))
        i = int(seg[i]) - 1
    return groups[::-1]


def placed(text: str, start: int, end: int) -> tuple[int, int]:
    """Where Chroma's evaluation puts the chunk that spans ``text[start:end]``."""
    target = text[start:end]
    if target.endswith("."):
        target = target[:-1]
    at = text.find(target)
    return at, at + len(target)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path,
                    default=ROOT.parent / "shared" / "data" / "chroma_chunking_eval")
    ap.add_argument("--out", type=Path, default=Path("/tmp/chunk-sweep-cluster-check"))
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--sizes", default="250,200")
    args = ap.parse_args()

    from sweep.chunking.external import langchain_recursive_spans
    from sweep.chunking.tokenizers import cl100k_tokenizer, count_tokens
    from sweep.data.corpus import load_corpus
    from sweep.data.golden import load_golden, require_valid
    from sweep.data.importers import run_import
    from sweep.embedding.cache import get_cache
    from sweep.embedding.models import EmbeddingSpec, get_embedder
    from sweep.evaluation.metrics import precision_omega
    from sweep.evaluation.relevance import CorpusIndex, resolve_all

    data = args.out.resolve() / "data"
    run_import("chroma", args.data, data, force=True)
    docs = load_corpus(data / "corpus")
    items = resolve_all(require_valid(load_golden(data / "golden.jsonl")).items,
                        CorpusIndex(docs), None)
    embedder = get_embedder(EmbeddingSpec())
    embedder.cache = get_cache((args.cache or args.out / "cache").resolve())
    tok = cl100k_tokenizer()

    pieces: dict[str, list[tuple[int, int]]] = {}
    sims: dict[str, np.ndarray] = {}
    for d in docs:
        pieces[d.doc_id] = langchain_recursive_spans(d.text, tok, PIECE_TOKENS, 0)
        vecs = embedder.encode([d.text[a:b] for a, b in pieces[d.doc_id]], progress=False)
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        sims[d.doc_id] = vecs @ vecs.T
        print(f"{d.doc_id}: {len(pieces[d.doc_id])} pieces", flush=True)

    for size in (int(s) for s in args.sizes.split(",")):
        spans: list[tuple[str, int, int]] = []
        lengths = []
        for d in docs:
            p = pieces[d.doc_id]
            for a, b in chroma_segments(sims[d.doc_id], size // PIECE_TOKENS):
                s, e = placed(d.text, p[a][0], p[b][1])
                spans.append((d.doc_id, s, e))
                lengths.append(count_tokens(tok, d.text[p[a][0] : p[b][1]]))
        values = [precision_omega(spans, r.spans, closed=True) for r in items if r.spans]
        mu = math.fsum(values) / len(values)
        mean, std = 100 * mu, 100 * math.sqrt(math.fsum((v - mu) ** 2 for v in values) / len(values))
        print(f"Cluster {size}/0 with Chroma's grouping: {len(spans)} chunks, mean "
              f"{np.mean(lengths):.1f} cl100k tokens (max {max(lengths)}), Precision_Ω "
              f"{mean:.1f} ± {std:.1f} over {len(values)} questions (published "
              f"{PUBLISHED.get(size, float('nan'))})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
