"""``sweep estimate``: what a sweep would send to served models, after the cache, before any
of it is spent.

    sweep estimate embedding=minilm,served_minilm chunk.size=128,256 [key=value ...]

The overrides are expanded like ``python -m sweep -m`` does (comma lists, ranges: Hydra's basic
sweeper); each configuration is chunked (no model runs), and the distinct texts it would embed
(chunks with their prefix, and the questions) that the embedding cache lacks are counted per
endpoint and model, each text once across the whole sweep, in tokens of the chunk tokenizer
(+2 special tokens a text). Reranking requests depend on retrieval and are counted as one per
question per configuration (and per question of the latency sample, plus two warm-ups),
their tokens not estimated.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def expand(overrides: Sequence[str]) -> list[list[str]]:
    """Every job's overrides, as Hydra's basic sweeper would launch them."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    batches = BasicSweeper.split_arguments(parsed, None)
    return [list(job) for batch in batches for job in batch]


def estimate(overrides: Sequence[str]) -> dict[str, Any]:
    from sweep.application.corpus import open_corpus_view
    from sweep.common.sqlite import text_key
    from sweep.config.axes import AXES
    from sweep.config.checks import check_config
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec
    from sweep.embedding.cache import get_cache
    from sweep.embedding.served import estimate_tokens, served_fingerprint
    from sweep.endpoints.cost import per_mtok, request_cost

    endpoints: dict[str, dict[str, Any]] = {}
    seen: dict[str, set[bytes]] = {}
    jobs = expand(overrides)
    for overrides_of_job in jobs:
        cfg = compose(overrides_of_job)
        check_config(cfg)
        job = build_job_spec(cfg)
        uses_dense = job.retrieval.uses_dense or job.retrieval.diagnose
        view = open_corpus_view(job)
        questions = [g.question for g in view.golden.items]
        rerank = job.rerank.spec
        # a billed reranker (a served /rerank endpoint, a ServedRerankSpec): its calls
        if AXES["rerank.method"].has(job.rerank.method, "costs_money"):
            key = f"rerank {rerank.endpoint.base_url} {rerank.model}"
            e = endpoints.setdefault(key, {"texts": 0, "tokens": 0, "requests": 0,
                                           "cost_usd": 0.0, "configs": 0})
            # the scored pass, then the latency sample after two warm-up questions
            timed = min(job.scoring.latency_sample, len(questions))
            n = len(questions) + timed + min(2, timed)
            e["configs"] += 1
            e["requests"] += n
            e["cost_usd"] += request_cost(0, n, 0.0, rerank.price_per_request)
        spec = job.embedding
        if spec.served is None or not uses_dense:
            continue
        fp = served_fingerprint(spec, spec.served)
        chunks = view.tiled()
        texts = [spec.document_prefix + c.embed_text for c in chunks]
        texts += [spec.query_prefix + q for q in questions]
        todo = {text_key(t): t for t in texts}
        mine = seen.setdefault(fp, set())
        todo = {k: t for k, t in todo.items() if k not in mine}
        mine.update(todo)
        if job.cache is not None and todo:
            cached = get_cache(job.cache).get_many(fp, list(todo))
            todo = {k: t for k, t in todo.items() if k not in cached}
        n_tokens = sum(estimate_tokens(list(todo.values())))
        served = spec.served
        key = f"embedding {served.endpoint.base_url} {served.model}"
        e = endpoints.setdefault(key, {"texts": 0, "tokens": 0, "requests": 0, "cost_usd": 0.0,
                                       "configs": 0})
        e["configs"] += 1
        e["texts"] += len(todo)
        e["tokens"] += n_tokens
        e["requests"] += -(-len(todo) // served.max_texts_per_request)
        e["cost_usd"] += per_mtok(n_tokens, served.price_per_mtok)
    return {"configurations": len(jobs), "endpoints": endpoints}


def cmd_estimate(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep estimate",
        description="Texts, tokens, requests and dollars a sweep would send to served models, "
        "after the embedding cache; nothing is sent.")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("overrides", nargs="*", help="the sweep's overrides (key=a,b ...)")
    args = parser.parse_args(argv)
    result = estimate(args.overrides)
    if args.json:
        import json

        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['configurations']} configurations")
    if not result["endpoints"]:
        print("  no served model: nothing would be sent")
    for key, e in result["endpoints"].items():
        print(f"  {key}: {e['configs']} configurations, {e['texts']} texts not in the cache, "
              f"~{e['tokens']} tokens, ~{e['requests']} requests, ~${e['cost_usd']:.4f}")
    return 0
