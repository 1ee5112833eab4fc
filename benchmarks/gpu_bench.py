"""The GPU figure of issue 46: a cold sweep against the encode floor of its own texts.

    python benchmarks/gpu_bench.py --out DIR [--device cuda] [--sizes 128,256,512] [--docs N]

Imports COVID-QA (``$CHUNK_SWEEP_SHARED_DATA/covid_qa``, or ``--covid FILE``), then, in this
order: loads MiniLM on ``--device`` and encodes every unique text of the bench grid once (the
floor: model load, CUDA start-up included, plus one bare ``SentenceTransformer.encode``, batch
``--batch``), frees it, and runs the cold sweep of that grid (``make bench``'s 12
configurations, hybrid retrieval, tracking off, an empty cache) with
``embedding.device=--device``. Prints both, their ratio (goal <= 2), the sweep's job time by
stage and the embed stage's own overhead. Nothing is asserted. `benchmarks/gpu.sh` carries
what it needs to a GPU machine without network and runs it there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # the bench's sweep, stage and text helpers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sizes", default="128,256,512")
    parser.add_argument("--docs", type=int, default=0,
                        help="COVID-QA's first N papers and their questions only (0 = all)")
    parser.add_argument("--batch", type=int, default=256,
                        help="batch size of the bare encode (the sweep's is embedding.batch_size)")
    parser.add_argument("--covid", default=str(bench.COVID))
    args = parser.parse_args()
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    covid = Path(args.covid)
    if not covid.is_file():
        sys.exit(f"gpu_bench: COVID-QA not found at {covid}")
    subprocess.run([sys.executable, "-m", "sweep.cli", "import", "squad", str(covid), "--out",
                    str(out / "covid")], check=True, stdout=subprocess.DEVNULL)
    if args.docs:
        bench.trim_covid(out / "covid", args.docs)
    print(f"device={args.device} configurations={4 * len(args.sizes.split(','))}  "
          f"({bench.load()})", flush=True)

    texts = bench.unique_texts(out, args.sizes)
    start = time.perf_counter()
    import torch
    from sentence_transformers import SentenceTransformer

    from sweep.chunking.tokenizers import minilm_path
    from sweep.common.hf import quiet_transformers

    quiet_transformers()
    model = SentenceTransformer(str(minilm_path()), device=args.device)
    model.encode(texts[:8], batch_size=8)  # CUDA context and kernels: part of the load
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    model.encode(texts, batch_size=args.batch, normalize_embeddings=True)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    encode_s = time.perf_counter() - start
    del model
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    floor = load_s + encode_s
    print(f"unique_texts={len(texts)} load_s={load_s:.1f} bare_encode_s={encode_s:.1f} "
          f"(batch {args.batch}) floor_s={floor:.1f}", flush=True)

    cold_s = bench.sweep(out, "cold", out / "cache", args.sizes,
                         [f"embedding.device={args.device}", "tracking=off"])
    print(f"cold_sweep_s={cold_s:.1f} cold_cpu_s={bench.SWEEP_CPU_S['cold']:.1f} "
          f"peak_rss_mb={bench.SWEEP_PEAK_MB['cold']:.0f}  ({bench.load()})", flush=True)
    print(f"cold_stages_s: {bench.job_seconds(out / 'cold')}", flush=True)
    bench.embed_overhead(out / "cold", "cold")
    print(f"cold_ratio={cold_s / floor:.2f}  (cold sweep / (model load + bare encode of its "
          f"unique texts); goal <= 2, issue 46; device={args.device}, "
          f"{os.cpu_count()} cores)", flush=True)


if __name__ == "__main__":
    main()
