"""The minimum detectable difference and the questions a difference needs: hand-computed
values, and simulations that draw paired outcomes with the stated difference at the stated n
and count how often the paired test detects it (close to 80%)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sweep.decide import power as pw
from sweep.decide.stats import paired_bootstrap

Z975, Z80 = 1.959963985, 0.841621234  # scipy.stats.norm.ppf(0.975), ppf(0.8)
K = Z975 + Z80


def test_formulas_by_hand():
    assert pw.mde_sd(0.3, 100) == pytest.approx(K * 0.3 / 10)
    assert pw.n_for_sd(0.3, 0.02) == math.ceil((K * 0.3 / 0.02) ** 2)  # 1,767
    assert pw.mde_discordant(0.16, 50) == pytest.approx(K * 0.4 / math.sqrt(50 + K * K))
    assert pw.n_for_discordant(0.16, 0.02) == math.ceil(K * K * (0.16 - 0.0004) / 0.0004)
    # The MDE at the n a difference needs is that difference (the two formulas invert).
    n = pw.n_for_discordant(0.2, 0.05)
    assert pw.mde_discordant(0.2, n) <= 0.05 < pw.mde_discordant(0.2, n - 1)
    n = pw.n_for_sd(0.25, 0.03)
    assert pw.mde_sd(0.25, n) <= 0.03 < pw.mde_sd(0.25, n - 1)
    # No pair of configurations that disagree on 5% of the questions differs by 10 points.
    assert pw.n_for_discordant(0.05, 0.1) is None


def test_summary_of_binary_differences():
    # 50 questions: A right and B wrong on 6, the reverse on 2.
    diffs = [1.0] * 6 + [-1.0] * 2 + [0.0] * 42
    s = pw.power_summary(diffs, detect=0.02)
    assert s["kind"] == "discordant" and s["n_discordant"] == 8
    assert s["discordant_share"] == pytest.approx(0.16)
    assert s["mde"] == pytest.approx(K * 0.4 / math.sqrt(50 + K * K))  # 0.146
    assert s["n_needed"] == pw.n_for_discordant(0.16, 0.02)
    assert s["rough"] and s["points"]
    assert s["text"].startswith("this set (50 questions) can tell apart differences of 15 "
                                "points or more (paired, 80% power, 5% two-sided); 2.0 points "
                                "needs ~3,100 questions")
    assert "8 of 50 questions differ; few" in s["text"]


def test_summary_of_graded_differences():
    diffs = [0.5, -0.25, 0.0, 0.125, 0.25, 0.0, -0.5, 0.75]
    s = pw.power_summary(diffs, detect=0.1)
    sd = float(np.std(diffs, ddof=1))
    assert s["kind"] == "sd" and s["n_discordant"] is None
    assert s["sd"] == pytest.approx(sd) and s["mean_diff"] == pytest.approx(np.mean(diffs))
    assert s["mde"] == pytest.approx(K * sd / math.sqrt(8))
    assert s["n_needed"] == math.ceil((K * sd / 0.1) ** 2)
    assert pw.power_summary(diffs)["n_needed"] is None  # nothing named, nothing sized


def test_summary_without_variation_says_why():
    s = pw.power_summary([0.0] * 30, detect=0.02)
    assert s["mde"] is None and s["n_needed"] is None
    assert s["text"] == ("power: not estimated (the two configurations score every question the "
                         "same: no paired variation to size the set from)")
    assert "same amount" in pw.power_summary([0.25] * 5)["reason"]
    assert "too few" in pw.power_summary([1.0])["reason"]
    with pytest.raises(ValueError):
        pw.power_summary([0.1, float("nan")])
    with pytest.raises(ValueError):
        pw.power_summary([0.1, 0.2], detect=0)
    with pytest.raises(ValueError):
        pw.power_summary([0.1, 0.2], power=1.0)


def test_round_count():
    assert [pw.round_count(n) for n in (7, 99, 1083, 1767, 12_345)] == [
        "7", "99", "1,100", "1,800", "12,000"]


def test_points_only_for_rates():
    s = pw.power_summary([120.0, -40.0, 300.0, 0.0, 55.0])  # e.g. context tokens
    assert not s["points"] and "points" not in s["text"]


# --- simulations: the stated power is the power the test has ---------------------------------

SIMS = 4000


def _wald_detects(d: np.ndarray) -> np.ndarray:
    """Two-sided 5% Wald test of the mean of each row's paired differences."""
    n = d.shape[1]
    se = d.std(axis=1, ddof=1) / math.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(d.mean(axis=1)) > Z975 * se


@pytest.mark.parametrize(("n", "psi"), [(50, 0.3), (200, 0.15), (1380, 0.1)])
def test_discordant_mde_is_detected_80_percent_of_the_time(n, psi):
    delta = pw.mde_discordant(psi, n)
    rng = np.random.default_rng(n)
    counts = rng.multinomial(n, [(psi + delta) / 2, (psi - delta) / 2, 1 - psi], size=SIMS)
    b, c = counts[:, 0], counts[:, 1]
    mean = (b - c) / n
    var = ((b + c) / n - mean**2) * n / (n - 1)
    detected = np.abs(mean) > Z975 * np.sqrt(var / n)
    # 4,000 draws: the share's standard error is 0.6 points.
    assert detected.mean() == pytest.approx(0.80, abs=0.025)
    # Half the difference is detected far less often: the MDE is where 80% is reached.
    half = rng.multinomial(n, [(psi + delta / 2) / 2, (psi - delta / 2) / 2, 1 - psi], size=SIMS)
    m2 = (half[:, 0] - half[:, 1]) / n
    v2 = ((half[:, 0] + half[:, 1]) / n - m2**2) * n / (n - 1)
    assert (np.abs(m2) > Z975 * np.sqrt(v2 / n)).mean() < 0.4


def test_graded_mde_is_detected_80_percent_of_the_time():
    # Differences of a graded rate: mostly 0, some +-1, some fractions (skewed, not normal).
    rng = np.random.default_rng(7)
    support = np.array([-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0])
    probs = np.array([0.06, 0.05, 0.08, 0.6, 0.08, 0.05, 0.08])
    n = 120
    base = rng.choice(support, size=(SIMS, n), p=probs)
    true_sd = float(np.sqrt((probs * (support - probs @ support) ** 2).sum()))
    delta = pw.mde_sd(true_sd, n)
    d = base - probs @ support + delta  # the known difference, the same spread
    assert _wald_detects(d).mean() == pytest.approx(0.80, abs=0.03)


def test_the_sweeps_bootstrap_detects_the_mde_about_80_percent_of_the_time():
    # The verdict `sweep compare` gives is the paired bootstrap, not the Wald test: fewer
    # draws (each is 500 resamples), so a wider margin.
    rng = np.random.default_rng(11)
    n, psi = 100, 0.2
    delta = pw.mde_discordant(psi, n)
    hits = 0
    sims = 150
    for i in range(sims):
        b, c, _ = rng.multinomial(n, [(psi + delta) / 2, (psi - delta) / 2, 1 - psi])
        d = np.array([1.0] * b + [-1.0] * c + [0.0] * (n - b - c))
        hits += paired_bootstrap(d, np.zeros(n), n=500, seed=i)[3] < 0.05
    assert 0.68 <= hits / sims <= 0.92


def test_summary_from_measured_differences_matches_simulation():
    # What the summary states for a measured pair holds when the questions to come are like
    # those measured: resampling the measured differences shifted to the MDE detects it ~80%.
    rng = np.random.default_rng(5)
    measured = rng.choice([-1.0, 0.0, 1.0], size=300, p=[0.07, 0.84, 0.09])
    s = pw.power_summary(measured)
    centred = measured - measured.mean()
    draws = rng.choice(centred, size=(SIMS, 300)) + s["mde"]
    assert _wald_detects(draws).mean() == pytest.approx(0.80, abs=0.03)
