"""Served vs local encoding of the same texts: texts/s on this machine.

Embeds the distinct chunk texts of the demo corpus (recursive, 256 tokens) with the local
MiniLM (sentence-transformers in this process) and with the same MiniLM behind the server of
`make model-server`, with 1 and 2 requests in flight, no cache, interleaved ``--reps`` times
(the machine's other load moves single figures a lot). Nothing is asserted.

    python benchmarks/served_throughput.py [--url http://127.0.0.1:7997/v1] [--reps 2]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:7997/v1")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()

    from sweep.chunking.chunkers import ChunkSpec
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec
    from sweep.embedding.embedder import ServedSpec
    from sweep.embedding.models import EmbeddingSpec, LocalEmbedder
    from sweep.embedding.served import ServedEmbedder
    from sweep.endpoints.spec import EndpointSpec
    from sweep.pipeline.memo import chunks_for, load_corpus_cached

    job = build_job_spec(compose([]))
    docs, fp = load_corpus_cached(job.corpus, job.cache)
    texts = list(dict.fromkeys(c.embed_text for c in chunks_for(
        docs, fp, ChunkSpec("recursive", 256, 0, "none"), "minilm")))
    local = LocalEmbedder(EmbeddingSpec("minilm", batch_size=args.batch, device="cpu"))
    local.encode(texts[:8], progress=False)  # warm-up

    def served(concurrency: int) -> ServedEmbedder:
        ep = EndpointSpec("embedding", args.url, concurrency=concurrency)
        return ServedEmbedder(EmbeddingSpec("served", "openai", served=ServedSpec(
            ep, "all-MiniLM-L6-v2", max_texts_per_request=args.batch)))

    served(1).encode(texts[:8], progress=False)  # warm-up (and the connection check)
    results: dict[str, list[float]] = {}
    for _ in range(args.reps):
        for name, run in (
            ("local sentence-transformers", lambda: local.model.encode(
                texts, batch_size=args.batch, normalize_embeddings=True)),
            ("served, 1 request in flight", lambda: served(1).encode(texts, progress=False)),
            ("served, 2 requests in flight", lambda: served(2).encode(texts, progress=False)),
        ):
            t = time.perf_counter()
            run()
            results.setdefault(name, []).append(len(texts) / (time.perf_counter() - t))
    print(f"{len(texts)} distinct demo chunks (recursive 256, batch {args.batch}), texts/s:")
    for name, rates in results.items():
        print(f"  {name:30s} " + " / ".join(f"{r:.1f}" for r in rates))


if __name__ == "__main__":
    main()
