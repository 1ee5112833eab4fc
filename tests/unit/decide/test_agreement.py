"""Does each axis's winner hold across embedding models (issue 47): a hand-made two-model
sweep whose best chunk size differs by model and whose best boundary does not."""

from __future__ import annotations

from sweep.decide import decision
from sweep.decide.agreement import model_agreement

N = 40  # questions


def hits(k: int) -> dict[str, float]:
    """The first k of the N questions found."""
    return {f"q{i:02d}": float(i < k) for i in range(N)}


# Questions found per (model, size, boundary): under minilm size 256 finds 12 more than 128,
# under minilm_static 128 finds 12 more than 256; heading beats recursive by 2 under both.
FOUND = {("minilm", 256, "heading"): 32, ("minilm", 256, "recursive"): 30,
         ("minilm", 128, "heading"): 20, ("minilm", 128, "recursive"): 18,
         ("minilm_static", 256, "heading"): 20, ("minilm_static", 256, "recursive"): 18,
         ("minilm_static", 128, "heading"): 32, ("minilm_static", 128, "recursive"): 30}
AXES = ["embedding.name", "embedding.family", "chunk.size", "chunk.boundary"]
FAMILY = {"minilm": "sentence_transformers", "minilm_static": "model2vec_distill"}


def sweep() -> tuple[list[dict], list[dict[str, float]]]:
    rows, scores = [], []
    for (model, size, boundary), k in sorted(FOUND.items(), key=lambda kv: -kv[1]):
        rows.append({"embedding.name": model, "embedding.family": FAMILY[model],
                     "chunk.size": size, "chunk.boundary": boundary, "recall_at_5": k / N})
        scores.append(hits(k))
    return rows, scores


def test_a_best_size_that_differs_by_model_is_reported_as_such() -> None:
    rows, scores = sweep()
    got = {e["axis"]: e for e in model_agreement(rows, AXES, "recall_at_5", scores, n=2000)}
    assert set(got) == {"chunk.size", "chunk.boundary"}  # the model's own keys are not judged
    size = got["chunk.size"]
    assert not size["holds"]
    assert size["best"] == {"minilm": 256, "minilm_static": 128}
    # under each model, the other's best loses 12 of 40 questions, on every question pair
    for model in ("minilm", "minilm_static"):
        other = next(v for v in size["effects"][model]["values"]
                     if v["value"] != size["best"][model])
        assert other["diff"] == -12 / N and other["n_questions"] == N
        assert other["within_noise"] is False
    assert size["text"].startswith("chunk.size: the best differs by model: minilm 256 (128 "
                                   "-0.300 [")
    assert "worse); minilm_static 128 (256 -0.300 [" in size["text"]
    boundary = got["chunk.boundary"]
    assert boundary["holds"] and boundary["best"] == {"minilm": "heading",
                                                      "minilm_static": "heading"}
    assert boundary["text"] == ("chunk.boundary: best heading under every model "
                                "(minilm, minilm_static)")


def test_the_group_axis_names_the_model() -> None:
    """A sweep over ``embedding=minilm,minilm_static``: the summary's axis is the group."""
    rows, scores = sweep()
    for row in rows:
        row["embedding"] = row.pop("embedding.name")
        del row["embedding.family"]
    got = model_agreement(rows, ["chunk.size", "chunk.boundary", "embedding"], "recall_at_5",
                          scores, n=2000)
    assert [(e["axis"], e["holds"]) for e in got] == [("chunk.size", False),
                                                      ("chunk.boundary", True)]
    assert got[0]["best"] == {"minilm": 256, "minilm_static": 128}


def test_one_model_says_nothing() -> None:
    rows, scores = sweep()
    mine = [i for i, r in enumerate(rows) if r["embedding.name"] == "minilm"]
    assert model_agreement([rows[i] for i in mine], AXES, "recall_at_5",
                           [scores[i] for i in mine]) == []
    assert model_agreement(rows, ["chunk.size", "chunk.boundary"], "recall_at_5", scores) == []


def test_the_summary_says_it_under_what_each_axis_did() -> None:
    rows, scores = sweep()
    out = decision.decide_sweep(rows, AXES, "recall_at_5", scores, n=2000)
    lines = out["axis_lines"]
    at = next(i for i, line in enumerate(lines) if line.startswith("does each axis's best"))
    assert lines[0].startswith("what each axis did") and at > 0
    assert any(line.startswith("  chunk.size: the best differs by model") for line in lines)
    assert [e["axis"] for e in out["agreement"]] == ["chunk.size", "chunk.boundary"]


def test_a_one_model_sweep_is_offered_the_recheck_and_a_two_model_one_is_not() -> None:
    rows, scores = sweep()
    mine = [i for i, r in enumerate(rows) if r["embedding.name"] == "minilm"]
    one = decision.decide_sweep([rows[i] for i in mine], ["chunk.size", "chunk.boundary"],
                                "recall_at_5", [scores[i] for i in mine], n=200)
    offer = [line for line in one["axis_lines"] if "sweep rerun --top" in line]
    assert len(offer) == 1 and "embedding=OTHER" in offer[0]
    two = decision.decide_sweep(rows, AXES, "recall_at_5", scores, n=200)
    assert not any("sweep rerun --top" in line for line in two["axis_lines"])
