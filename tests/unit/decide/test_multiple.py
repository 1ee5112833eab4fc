"""Many comparisons: Holm and Benjamini-Hochberg against a hand-computed table, and a sweep of
40 configurations that differ only by noise, where the uncorrected verdicts say "worse" and
the corrected ones do not."""

from __future__ import annotations

import numpy as np
import pytest

from sweep.decide import multiple, stats

# Five tests and an untested row (None). Sorted: 0.005, 0.01, 0.03, 0.04, 0.20 (m = 5).
P = [0.01, 0.04, 0.03, 0.005, None, 0.20]


def test_holm_by_hand():
    # (m - j + 1) * p_(j), running maximum: 0.025, 0.04, 0.09, max(0.08, 0.09), 0.20
    assert multiple.adjust(P, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.025, None, 0.20])


def test_bh_by_hand():
    # m * p_(j) / j, running minimum from the top: 0.025, 0.025, 0.05, 0.05, 0.20
    assert multiple.adjust(P, "bh") == pytest.approx([0.025, 0.05, 0.05, 0.025, None, 0.20])


def test_none_and_caps_and_errors():
    assert multiple.adjust(P, "none") == P
    assert multiple.adjust([0.5, 0.6], "holm") == [1.0, 1.0]  # 2 * 0.5 capped; monotone
    assert multiple.adjust([0.5, 0.6], "bh") == pytest.approx([0.6, 0.6])
    assert multiple.adjust([None, None], "holm") == [None, None]
    assert multiple.adjust([], "bh") == []
    with pytest.raises(ValueError, match="unknown correction 'bonf'"):
        multiple.adjust([0.1], "bonf")
    with pytest.raises(ValueError):
        multiple.adjust([1.5], "holm")


def test_adjusted_never_below_raw_and_holm_at_least_bh():
    rng = np.random.default_rng(0)
    p = rng.random(50) ** 3
    holm, bh = multiple.adjust(p.tolist(), "holm"), multiple.adjust(p.tolist(), "bh")
    assert all(h >= b - 1e-15 and b >= x - 1e-15 for x, h, b in zip(p, holm, bh, strict=True))
    # Holm is never more than Bonferroni, BH rejects at least what Holm rejects.
    assert all(h <= min(1.0, 50 * x) + 1e-15 for x, h in zip(p, holm, strict=True))


# --- the table's verdicts ---------------------------------------------------------------------


def _scores(values):
    return {f"q{i:03d}": float(v) for i, v in enumerate(values)}


def test_one_comparison_is_the_pairs_own_bootstrap():
    rng = np.random.default_rng(2)
    best = (rng.random(80) < 0.7).astype(float)
    other = np.where(rng.random(80) < 0.25, 1 - best, best)
    [v] = stats.table_verdicts([_scores(best), _scores(other)], "recall_at_5", "none", n=2000)
    alone = stats.verdict_against_best(best, other, "recall_at_5", n=2000)
    assert (v.diff, v.lo, v.hi, v.p, v.tied) == pytest.approx(
        (alone.diff, alone.lo, alone.hi, alone.p, alone.tied))
    # With one pair, Holm changes nothing.
    [h] = stats.table_verdicts([_scores(best), _scores(other)], "recall_at_5", "holm", n=2000)
    assert h.p_adj == pytest.approx(v.p) and h.tied == v.tied


def test_resampled_means_are_the_paired_bootstraps_draws():
    rng = np.random.default_rng(4)
    s = rng.random((57, 3))
    means = stats.resampled_means(s, n=1500, seed=3)
    boots = np.round(means[:, 2] - means[:, 1], 12)
    _, lo, hi, p = stats.paired_bootstrap(s[:, 2], s[:, 1], n=1500, seed=3)
    assert np.percentile(boots, [2.5, 97.5]) == pytest.approx([lo, hi])
    assert min(1, 2 * min((boots <= 0).mean(), (boots >= 0).mean())) == pytest.approx(p)


def _one_bincount_means(scores, n, seed):
    """`resampled_means` as first written: one bincount over each step's draws (the draws
    and the product the same; only how the counts are made differs)."""
    s = np.asarray(scores, dtype=float)
    m = s.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty((n, s.shape[1]))
    step = max(1, 4_000_000 // m)
    for start in range(0, n, step):
        size = min(step, n - start)
        idx = rng.integers(0, m, size=(size, m))
        flat = (idx + (np.arange(size) * m)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * m).reshape(size, m)
        out[start : start + size] = counts.astype(float) @ s / m
    return out


@pytest.mark.parametrize("m", [1380, 1381, 7])
def test_bounded_draws_in_pieces_are_the_draws_at_once(m):
    """What `resampled_means` relies on to draw a step's resamples a few at a time: numpy's
    generator gives the same values for the same number of draws however they are split
    (odd pieces included)."""
    whole = np.random.default_rng(0).integers(0, m, size=(301, m))
    rng = np.random.default_rng(0)
    pieces = np.concatenate([rng.integers(0, m, size=(r, m)) for r in (1, 64, 3, 200, 33)])
    assert whole.tobytes() == pieces.tobytes()


@pytest.mark.parametrize(("m", "k", "n"), [
    (1380, 12, 10_000),  # the covid bench's table: 1,380 questions, 12 configurations
    (57, 3, 1500), (5, 2, 130),  # one step, its last block partial
    (70_000, 2, 200),  # steps of 57 resamples, smaller than a block
])
def test_resampled_means_counted_in_blocks_are_the_same_to_the_bit(m, k, n):
    rng = np.random.default_rng(m)
    # what a table holds: reciprocal ranks, recall over 1-7 passages, zeros and ones
    ranks = rng.integers(1, 30, size=(m, k))
    need = rng.integers(1, 8, size=(m, k))
    s = np.where(rng.random((m, k)) < 0.5, 1.0 / ranks,
                 np.floor(rng.random((m, k)) * (need + 1)) / need)
    got = stats.resampled_means(s, n=n, seed=0)
    want = _one_bincount_means(s, n, 0)
    assert got.shape == (n, k) and got.tobytes() == want.tobytes()


def _noise_sweep(seed, n_configs=40, n_questions=120, n_ties=30):
    """One configuration 40 times with its ties shuffled: 30 of 120 questions have their
    relevant chunk tied at the cut-off, and the tie-break decides each run (50/50)."""
    rng = np.random.default_rng(seed)
    base = (rng.random(n_questions) < 0.7).astype(float)
    runs = np.tile(base, (n_configs, 1))
    ties = rng.choice(n_questions, n_ties, replace=False)
    runs[:, ties] = rng.random((n_configs, n_ties)) < 0.5
    order = np.argsort(-runs.mean(axis=1), kind="stable")  # best first, as the table
    return [_scores(runs[j]) for j in order]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forty_noise_only_configurations_none_worse_when_corrected(seed):
    rows = _noise_sweep(seed)
    worse = {c: sum(not v.tied for v in stats.table_verdicts(rows, "recall_at_5", c, n=2000))
             for c in ("none", "holm", "bh")}
    assert worse["none"] >= 3  # uncorrected: the luckiest run makes others look worse
    assert worse["holm"] == 0 and worse["bh"] == 0


def test_a_real_difference_survives_the_correction():
    rows = _noise_sweep(5, n_configs=12)
    rng = np.random.default_rng(9)
    bad = np.array(list(rows[-1].values()))
    bad[rng.choice(bad.size, 40, replace=False)] = 0.0  # loses a third of the questions
    verdicts = stats.table_verdicts([*rows, _scores(bad)], "recall_at_5", "holm", n=2000)
    assert not verdicts[-1].tied and verdicts[-1].text.startswith("worse, p_holm")
    assert all(v.tied for v in verdicts[:-1])
    assert verdicts[-1].p_adj >= verdicts[-1].p


def test_verdict_text_names_the_correction():
    v = stats.decide_verdict(40, -0.1, -0.2, -0.01, 0.01, "recall_at_5", p_adj=0.2,
                              correction="holm")
    assert v.tied and v.text == ("tied with best, p_holm=0.200 (p=0.010; diff -0.100, 95% CI "
                                 "[-0.200, -0.010])")
    v = stats.decide_verdict(40, -0.1, -0.2, -0.01, 0.01, "recall_at_5", p_adj=0.03,
                              correction="bh")
    assert not v.tied and v.text.startswith("worse, p_bh=0.030 (p=0.010;")
    v = stats.decide_verdict(40, -0.1, -0.2, -0.01, 0.01, "recall_at_5")
    assert not v.tied and v.text == "worse, p=0.010 (diff -0.100, 95% CI [-0.200, -0.010])"


def test_missing_scores_and_disjoint_questions():
    best = _scores([1, 0, 1, 1])
    out = stats.table_verdicts([best, None, {"zz": 1.0}], "recall_at_5", "holm", n=200)
    assert out[0] is None
    assert out[1].text == "n/a (no question scored in both)"
    assert stats.table_verdicts([None, best], "recall_at_5") == [None]
