"""``sweep cache info | clear``: the on-disk embedding cache (and what is cached beside it: token
starts, BM25 indexes, the gate's memos, the golden set audits' findings, the models exported
for embedding.backend).

    sweep cache info|clear [overrides...]   (cache.dir=DIR picks the folder)
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

from sweep.application.audit import MEMO_FOLDER as AUDIT_FOLDER
from sweep.chunking.cache import get_starts_cache
from sweep.common.files import DIGESTS_FOLDER
from sweep.common.store import CacheTarget
from sweep.config.compose import compose
from sweep.config.specs import cache_target
from sweep.decide.memo import FOLDER as GATE_FOLDER
from sweep.embedding.backends import EXPORTS_FOLDER, exported_models
from sweep.embedding.cache import FILE_NAME, PACKS_FOLDER, get_cache
from sweep.endpoints.ledger import clear_ledger, ledger_summary
from sweep.retrieval.bm25 import CACHE_FOLDER


def cmd_cache(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep cache",
                                     description="Inspect or empty the embedding cache (and the "
                                     "token starts, BM25 indexes, gate memos and model file "
                                     "digests cached beside it).")
    parser.add_argument("action", choices=["info", "clear"])
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. cache.dir=DIR")
    args = parser.parse_args(argv)
    cfg = compose(args.overrides)
    target = cache_target(cfg) or CacheTarget(cfg.cache.dir)
    cache = get_cache(target)
    starts = get_starts_cache(target)
    if args.action == "clear":
        clear_ledger(cache.folder / FILE_NAME)
        packs = len(cache.pack_files())
        print(f"removed {cache.clear()} vectors (and their token lengths) from {cache.location}"
              f", and {packs} vector pack{'' if packs == 1 else 's'}")
        spans = starts.count_spans()
        print(f"removed the token starts of {starts.clear()} documents and {spans} documents' "
              f"chunk spans from {starts.path}")
        bm25 = Path(cfg.cache.dir) / CACHE_FOLDER
        n = len(list(bm25.iterdir())) if bm25.is_dir() else 0
        shutil.rmtree(bm25, ignore_errors=True)
        print(f"removed {n} BM25 indexes from {bm25}")
        gate = Path(cfg.cache.dir) / GATE_FOLDER
        n = len(list(gate.glob("*.json"))) if gate.is_dir() else 0
        shutil.rmtree(gate, ignore_errors=True)
        print(f"removed {n} gate memo{'' if n == 1 else 's'} from {gate}")
        audits = Path(cfg.cache.dir) / AUDIT_FOLDER
        n = len(list(audits.glob("*.json"))) if audits.is_dir() else 0
        shutil.rmtree(audits, ignore_errors=True)
        print(f"removed {n} golden set audit{'' if n == 1 else 's'} from {audits}")
        exports = Path(cfg.cache.dir) / EXPORTS_FOLDER
        n = len(exported_models(exports))
        shutil.rmtree(exports, ignore_errors=True)
        print(f"removed {n} exported model{'' if n == 1 else 's'} from {exports}")
        digests = Path(cfg.cache.dir) / DIGESTS_FOLDER
        n = len(list(digests.iterdir())) if digests.is_dir() else 0
        shutil.rmtree(digests, ignore_errors=True)
        print(f"removed {n} model file digest{'' if n == 1 else 's'} from {digests}")
        return 0
    info = cache.info()
    print(f"{info['path']}: {info['vectors']} vectors, {info['token_lengths']} token lengths, "
          f"{info['bytes_on_disk'] / 1e6:.1f} MB on disk")
    packs = cache.pack_files()
    size = sum(p.stat().st_size for p in packs)
    print(f"{cache.folder / PACKS_FOLDER}: {len(packs)} vector pack"
          f"{'' if len(packs) == 1 else 's'} (whole reads kept as one file), {size / 1e6:.1f} MB")
    print(f"{starts.path}: token starts of {starts.count()} documents, chunk spans of "
          f"{starts.count_spans()} (document, boundary, size, overlap)")
    bm25 = Path(cfg.cache.dir) / CACHE_FOLDER
    folders = [p for p in bm25.iterdir() if p.is_dir()] if bm25.is_dir() else []
    size = sum(f.stat().st_size for p in folders for f in p.iterdir())
    print(f"{bm25}: {len(folders)} BM25 indexes, {size / 1e6:.1f} MB")
    gate = Path(cfg.cache.dir) / GATE_FOLDER
    memos = list(gate.glob("*.json")) if gate.is_dir() else []
    print(f"{gate}: {len(memos)} gate memo{'' if len(memos) == 1 else 's'} (the runs "
          "`sweep baseline check` reuses while their inputs are unchanged)")
    audits = Path(cfg.cache.dir) / AUDIT_FOLDER
    found_audits = list(audits.glob("*.json")) if audits.is_dir() else []
    print(f"{audits}: {len(found_audits)} golden set audit{'' if len(found_audits) == 1 else 's'} "
          "(the findings a sweep's end reads back while the corpus, golden set and code are "
          "unchanged)")
    exports = Path(cfg.cache.dir) / EXPORTS_FOLDER
    found = exported_models(exports)
    size = sum(f.stat().st_size for p in found for f in p.rglob("*") if f.is_file())
    print(f"{exports}: {len(found)} exported model{'' if len(found) == 1 else 's'} "
          f"(embedding.backend/precision), {size / 1e6:.1f} MB")
    digests = Path(cfg.cache.dir) / DIGESTS_FOLDER
    n = len(list(digests.iterdir())) if digests.is_dir() else 0
    print(f"{digests}: {n} model file digest{'' if n == 1 else 's'} (a model's large files "
          "are not read again while their stat is unchanged)")
    for model, stats in info["models"].items():  # type: ignore[union-attr]
        print(f"  model {model}: {stats['vectors']} vectors")
    # what served models were paid for, and what the cache has answered since
    for row in ledger_summary(cache.folder / FILE_NAME):
        print(f"  served {row['model']} (fingerprint {row['fingerprint']}): paid for "
              f"{row['texts_paid']} texts, {row['tokens_paid']} tokens, "
              f"${row['cost_usd_paid']:.4f}; the cache has answered {row['texts_from_cache']} "
              f"texts since, saving ~{row['tokens_saved']:.0f} tokens, "
              f"~${row['cost_usd_saved']:.4f}")
    return 0
