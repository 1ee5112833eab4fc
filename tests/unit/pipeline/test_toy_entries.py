"""Adding an axis value is one module and one entry: a boundary and an index kind registered
in this test alone are accepted by the schema (Hydra overrides), run by a real job over the
bundled demo (the bundled MiniLM, caches in tmp_path), scored, and hashed as their own
configurations. docs/development.md ("Add an axis value in one file") shows this test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sweep.application.job import JobResult, run_job
from sweep.chunking.chunkers import BOUNDARY, TokenizedDoc
from sweep.common.errors import SweepError
from sweep.common.registry import Entry
from sweep.config.compose import compose, to_container
from sweep.config.identity import identity_payload
from sweep.config.specs import build_job_spec
from sweep.data.corpus import load_corpus
from sweep.retrieval.index import INDEX, IndexSpec
from sweep.retrieval.ranking import Ranking

# --- the toy boundary: one chunk per blank-line-separated block, as it is -------------------

_BLANK = re.compile(r"\n[ \t]*\n")


def blank_line_spans(d: TokenizedDoc, size: int, overlap: int) -> list[tuple[int, int]]:
    """The blocks between blank lines, trimmed of surrounding whitespace (size and overlap
    ignored: a toy)."""
    spans, start = [], 0
    for cut in [*_BLANK.finditer(d.text), None]:
        end = cut.start() if cut else len(d.text)
        piece = d.text[start:end]
        a, b = start + len(piece) - len(piece.lstrip()), end - len(piece) + len(piece.rstrip())
        if a < b:
            spans.append((a, b))
        start = cut.end() if cut else end
    return spans


# --- the toy index kind: brute force over the float vectors, by argsort ---------------------

@dataclass
class BruteIndex:
    vecs: np.ndarray
    tiebreak: np.ndarray
    kind: str = "brute"
    build_s: float = 0.0

    @property
    def nbytes(self) -> int:
        return int(self.vecs.nbytes)

    def search(self, query_vecs: np.ndarray, depth: int) -> list[Ranking]:
        out = []
        for scores in query_vecs @ self.vecs.T:
            # best score first, equal scores by the tiebreak order (as every index answers)
            order = np.lexsort((self.tiebreak, -scores))[:depth]
            out.append(Ranking(tuple(int(i) for i in order),
                               tuple(float(scores[i]) for i in order)))
        return out


def build_brute(spec: IndexSpec, vecs: np.ndarray, tiebreak: np.ndarray) -> BruteIndex:
    return BruteIndex(np.asarray(vecs, dtype=np.float32), np.asarray(tiebreak))


TOY_BOUNDARY = Entry("blank_lines", blank_line_spans, doc="one chunk per block")
TOY_INDEX = Entry("brute", build_brute, doc="numpy brute force")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, JobResult]]:
    cache = tmp_path_factory.mktemp("cache")
    base = [f"cache.dir={cache}", "eval.latency_sample=0", "retrieval.diagnose=false"]
    grid = {"blank_exact": ["chunk.boundary=blank_lines"],
            "blank_brute": ["chunk.boundary=blank_lines", "index.kind=brute"],
            "paragraph": ["chunk.boundary=paragraph"]}
    with BOUNDARY.added(TOY_BOUNDARY), INDEX.added(TOY_INDEX):
        out = {}
        for name, overrides in grid.items():
            cfg = compose([*base, *overrides])
            out[name] = (to_container(cfg), run_job(build_job_spec(cfg), progress=False))
    return out


def test_the_toy_entries_are_gone_after_the_test_and_refused_again() -> None:
    assert "blank_lines" not in BOUNDARY and "brute" not in INDEX
    with pytest.raises(SweepError, match=r"Invalid value 'blank_lines'"):
        compose(["chunk.boundary=blank_lines"])


def test_the_toy_boundary_cuts_the_demo_into_its_blocks(runs) -> None:
    plain, result = runs["blank_exact"]
    docs = load_corpus(plain["corpus"]["path"])
    # independent count: the non-blank pieces of a split on blank lines
    blocks = sum(len([p for p in _BLANK.split(d.text) if p.strip()]) for d in docs)
    metrics = result.report["metrics"]
    assert metrics["n_chunks"] == blocks
    assert 0.0 <= metrics["recall_at_5"] <= 1.0 and 0.0 < metrics["mrr"] <= 1.0
    # a different chunking than paragraph's (which packs blocks up to the size)
    assert metrics["n_chunks"] != runs["paragraph"][1].report["metrics"]["n_chunks"]


def test_the_toy_index_answers_as_exact_search(runs) -> None:
    exact = runs["blank_exact"][1].report["metrics"]
    brute = runs["blank_brute"][1].report["metrics"]
    # brute force over the same vectors is exact: every neighbour found, no tax
    assert brute["ann_overlap_at_10"] == pytest.approx(1.0)
    for name in ("recall_at_5", "mrr", "ndcg_at_10"):
        assert brute[name] == pytest.approx(exact[name])
    for name in ("recall_at_5", "mrr"):  # the headline and MRR carry the ANN tax
        assert brute[f"ann_tax_{name}"] == pytest.approx(0.0, abs=1e-12)


def test_each_toy_choice_is_its_own_configuration(runs) -> None:
    hashes = {name: r.report["config_hash"] for name, (_, r) in runs.items()}
    assert len(set(hashes.values())) == 3
    plain = runs["blank_brute"][0]
    payload = identity_payload(plain, "c", "g")
    assert payload["chunk"]["boundary"] == "blank_lines"
    # the toy index reads no setting: only its kind enters the hash (the HNSW and IVF
    # settings are gated off, as they are for any kind that does not read them)
    assert payload["index"] == {"kind": "brute"}
    assert "index" not in identity_payload(runs["blank_exact"][0], "c", "g")


def test_a_setting_the_toy_index_does_not_read_changes_no_hash(tmp_path: Path) -> None:
    from sweep.config.identity import config_hash

    with INDEX.added(TOY_INDEX):
        a, b = (to_container(compose(["index.kind=brute", f"index.ef_search={n}"]))
                for n in (8, 64))
        c = to_container(compose(["index.kind=hnsw", "index.ef_search=8"]))
    assert config_hash(a, "c", "g") == config_hash(b, "c", "g") != config_hash(c, "c", "g")
