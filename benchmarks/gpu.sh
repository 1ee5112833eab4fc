#!/usr/bin/env bash
# The GPU figure of issue 46: cold sweep / (model load + bare encode of its unique texts).
#
#   benchmarks/gpu.sh pack [PACK]   here, in the project's venv: PACK (default
#                                   .cache/gpu-pack) gets what a GPU machine lacks
#                                   (benchmarks/gpu_pack.py says what and why)
#   benchmarks/gpu.sh run [PACK]    on the GPU machine (PyTorch, sentence-transformers,
#                                   transformers; no network), from a checkout of this
#                                   repository with PACK beside it: unpacks, checks MiniLM's
#                                   vectors, then benchmarks/gpu_bench.py prints the figures
#   benchmarks/gpu.sh all           both, here (with DEVICE=cpu: the check that it works)
#
# DEVICE (cuda), SIZES (128,256,512: make bench's 12 configurations), DOCS (0: all of
# COVID-QA; e.g. 8 for a quick check), PYTHON (the interpreter: python3 for run, the venv's
# for pack), WORK (where run unpacks and sweeps; default a temporary folder).
# Budget on an H200: unpack ~20 s, the bare encode ~10 s, the cold sweep ~60 s at f2a0e94.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cmd=${1:-}
pack=$(realpath -m "${2:-$root/.cache/gpu-pack}")
DEVICE=${DEVICE:-cuda}
SIZES=${SIZES:-128,256,512}
DOCS=${DOCS:-0}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

do_pack() {
    local py=${PYTHON:-$root/.venv/bin/python}
    rm -rf "$pack"
    "$py" "$here/gpu_pack.py" pack "$pack"
}

do_run() {
    local py=${PYTHON:-python3}
    local work=${WORK:-$(mktemp -d)}
    "$py" "$here/gpu_pack.py" unpack "$pack" "$work"
    # the carried packages first: chunk-sweep and what the machine lacks
    PYTHONPATH="$work/site" CHUNK_SWEEP_CACHE="$work/home-cache" \
        "$py" "$here/gpu_bench.py" --out "$work/bench" --device "$DEVICE" --sizes "$SIZES" \
        --docs "$DOCS" --covid "$pack/covid_qa.json"
}

case "$cmd" in
    pack) do_pack ;;
    run) do_run ;;
    all) do_pack; PYTHON=${PYTHON:-$root/.venv/bin/python} do_run ;;
    *) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
