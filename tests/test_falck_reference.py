"""Falck et al.'s statistics as bayes_icl defines them: cotplan's implementation against a literal
transcription of the authors' code, on the same paths and the same random draws, and the
statistics' false alarm rate on exchangeable (exact Bayes) paths."""

from __future__ import annotations

import math
import warnings
from collections import namedtuple
from typing import Any

import numpy as np
import pytest
import scipy.stats as stats

from cotplan.errors import InputError
from cotplan.research.experiments import falck_reference
from cotplan.research.experiments.falck import FALCK_QUICK, falck_tests
from cotplan.research.experiments.falck_reference import (
    BS_K_EU,
    BS_K_MP,
    COMMIT,
    alarm_count,
    eu_check,
    first_minus_second,
    marginal_acf,
    mp_check,
    multi_acf_diff,
    remove_outliers_abs,
)
from cotplan.research.experiments.predictors import BetaBernoulli, Recency, laplace

# --- Test-only transcription of meta-inf/bayes_icl (MIT License, Copyright (c) 2024 The Authors)
# https://github.com/meta-inf/bayes_icl/blob/9e9d544ac464ade1c119c514393fa9d3c03acfe8/plotting.py
# https://github.com/meta-inf/bayes_icl/blob/9e9d544ac464ade1c119c514393fa9d3c03acfe8/agg_plot.py
# Copied as written (the Bernoulli branch of sample_ref_posterior_and_data; tqdm dropped; the
# band readers are the lines of mean_ag_plot and ar_diff_plot that compute y_lo/y_hi and
# ar_lo/ar_hi, and of plot_scaling_main that compute the IQRs). Names keep their spelling.


def _iqr(a):  # type: ignore[no-untyped-def]  # plotting.iqr
    return np.quantile(a, 0.75) - np.quantile(a, 0.25)


def _remove_outliers_abs(sample_paths):  # type: ignore[no-untyped-def]
    a = np.abs(sample_paths).mean(1)
    q1, q3 = np.quantile(a, [0.25, 0.75])
    iqr = q3 - q1
    mask = (q1 - 1.5 * iqr <= a) & (a <= q3 + 1.5 * iqr)
    return sample_paths[mask]


def _ref_bernoulli_posterior(n, phat):  # type: ignore[no-untyped-def]
    return stats.beta(n * phat + 1, n * (1 - phat) + 1)


def _remove_outliers_1d(a):  # type: ignore[no-untyped-def]
    q1, q3 = np.quantile(a, [0.25, 0.75])
    iqr = q3 - q1
    mask = (q1 - 1.5 * iqr <= a) & (a <= q3 + 1.5 * iqr)
    return a[mask]


def _marginal_acf(paths, Kmax=5):  # type: ignore[no-untyped-def]
    ret = []
    for i in range(1, Kmax + 1):
        t = (paths[:, i:] * paths[:, :-i]).mean(1)
        t = _remove_outliers_1d(t)
        ret.append(t.mean() / (1e-5 + (paths[:, i:-i] ** 2).mean()))
    return np.asarray(ret)


def _multi_acf_diff(paths, Kmax=5):  # type: ignore[no-untyped-def]
    macf = _marginal_acf(paths, Kmax)
    return np.asarray([macf[i] - macf[0] for i in range(1, Kmax)])


def _sample_ref_posterior_and_data(data_type, mean_param, n, N, K):  # type: ignore[no-untyped-def]
    assert data_type in ["bernoulli", "coin_flip"]
    posterior_params = _ref_bernoulli_posterior(n, mean_param).rvs(size=(K,))
    completion = (np.random.uniform(size=(K, N)) < posterior_params[:, None]).astype("f")
    return posterior_params, completion


Dump = namedtuple("Dump", "data completion")


def _compute_ag_stats(dump):  # type: ignore[no-untyped-def]
    K, N = dump.completion.shape  # noqa: RUF059
    noisy_MP_params = dump.completion.mean(1)
    return {
        "mean_former": dump.completion[:, : N // 2].mean(),
        "mean_latter": dump.completion[:, N // 2 :].mean(),
        "noisy_MP_params": noisy_MP_params,
        "ar_diff": _multi_acf_diff(dump.completion),
    }


def _compute_ag_stats_and_bootstrap(  # type: ignore[no-untyped-def]
    dumps,
    BS_K=300,
    data_type="bernoulli",
    ref_posterior_fractional=1.0,
    trunc_N=-1,
):
    def bootstrap(param, n, N, K, data):  # type: ignore[no-untyped-def]
        bs_stats = []
        for _ in range(BS_K):
            _, ref_posterior_completion = _sample_ref_posterior_and_data(data_type, param, n, N, K)
            ag_stats_i = _compute_ag_stats(Dump(data=data, completion=ref_posterior_completion))
            bs_stats.append(ag_stats_i)
        return bs_stats

    all_ag_stats, all_bs_stats, all_bs_mm_stats = [], [], []
    for dump in dumps:
        assert dump.data.shape[1] == 1
        if trunc_N > 0:
            dump = dump._replace(completion=dump.completion[:, :trunc_N])
        dump = dump._replace(completion=_remove_outliers_abs(dump.completion))
        n, (K, N) = dump.data.shape[0], dump.completion.shape
        all_ag_stats.append(_compute_ag_stats(dump))
        emp_mean = dump.data.mean()
        bs_n_ref = int(n * ref_posterior_fractional)
        all_bs_stats.append(bootstrap(emp_mean, bs_n_ref, N, K, dump.data))
        mp_mean = dump.completion.mean()
        all_bs_mm_stats.append(bootstrap(mp_mean, bs_n_ref, N, K, dump.data))
    return all_ag_stats, all_bs_stats, all_bs_mm_stats


# --- end of the transcription


def _quiet(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Their code warns on a mean of an empty slice (a lag longer than the path allows)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def _fixed_paths() -> list[tuple[str, np.ndarray[Any, Any]]]:
    rng = np.random.default_rng(20240601)
    cases = []
    for k, length, p in [(20, 10, 0.3), (20, 40, 0.5), (8, 12, 0.7), (30, 4, 0.4), (25, 100, 0.2)]:
        cases.append((f"iid K={k} N={length}", (rng.random((k, length)) < p).astype(float)))
    # Outlying paths, so that both trimming rules remove something.
    drift = (rng.random((16, 24)) < 0.2).astype(float)
    drift[:2] = 1.0
    cases.append(("two all-ones paths", drift))
    context = (rng.random(20) < 0.3).astype(int).tolist()
    recency = Recency(0.6).sample_paths(context, rng.random((20, 30))).astype(float)
    cases.append(("recency(0.6) paths", recency))
    return cases


@pytest.mark.parametrize(("name", "paths"), _fixed_paths())
def test_the_statistics_equal_bayes_icl_on_fixed_paths(name: str, paths: np.ndarray) -> None:  # type: ignore[type-arg]
    kept = remove_outliers_abs(paths)
    np.testing.assert_array_equal(kept, _remove_outliers_abs(paths))
    for z in (paths, kept):
        np.testing.assert_allclose(
            marginal_acf(z), _quiet(_marginal_acf, z), rtol=1e-12, atol=1e-12, equal_nan=True
        )
        np.testing.assert_allclose(
            multi_acf_diff(z), _quiet(_multi_acf_diff, z), rtol=1e-12, atol=1e-12, equal_nan=True
        )
        theirs = _quiet(_compute_ag_stats, Dump(np.zeros((20, 1)), z))
        assert float(first_minus_second(z)) == pytest.approx(
            theirs["mean_former"] - theirs["mean_latter"], abs=1e-12
        )
    # Four differences, lags 2..5 minus lag 1; undefined (NaN) where N <= 2·lag, as theirs.
    diffs = multi_acf_diff(paths)
    assert diffs.shape == (4,)
    assert [math.isnan(d) for d in diffs] == [paths.shape[1] <= 2 * lag for lag in range(2, 6)]


def test_the_draw_counts_are_theirs() -> None:
    # cid_std_fig: compute_ag_stats_and_bootstrap(..., BS_K=600); plot_scaling_main: BS_K=500.
    assert (BS_K_MP, BS_K_EU) == (600, 500)


def test_stacked_draws_give_each_draw_its_own_statistics() -> None:
    rng = np.random.default_rng(4)
    stack = (rng.random((7, 12, 16)) < 0.4).astype(np.float32)
    together = multi_acf_diff(stack)
    for d in range(stack.shape[0]):
        np.testing.assert_allclose(
            together[d], _quiet(_multi_acf_diff, stack[d]), rtol=1e-6, atol=1e-6
        )


def _context_and_paths(seed: int, n: int, k: int, length: int) -> tuple[list[int], Any]:
    rng = np.random.default_rng(seed)
    context = (rng.random(n) < 0.3).astype(int).tolist()
    return context, Recency(0.7).sample_paths(context, rng.random((k, length)))


@pytest.mark.parametrize(("n", "k", "length"), [(20, 20, 10), (50, 12, 25)])
def test_the_bands_equal_bayes_icl_given_the_same_draws(n: int, k: int, length: int) -> None:
    context, paths = _context_and_paths(n, n, k, length)
    # Fewer draws than their 600 (BS_K_MP) keep the test short: their loop is slow, and the
    # construction does not depend on the count.
    draws = 120
    mine = mp_check(paths, context, np.random.RandomState(7), draws=draws)
    np.random.seed(7)  # their code draws from numpy's global state
    ag, bs, bs_mm = _quiet(
        _compute_ag_stats_and_bootstrap,
        [Dump(np.asarray(context, dtype=float)[:, None], paths.astype(float))],
        BS_K=draws,
    )
    ag, bs, bs_mm = ag[0], bs[0], bs_mm[0]
    t1_null = [s["mean_former"] - s["mean_latter"] for s in bs_mm]
    t2_first = [s["ar_diff"][0] for s in bs]
    assert mine.kept == len(ag["noisy_MP_params"])
    assert mine.t1 == pytest.approx(ag["mean_former"] - ag["mean_latter"], abs=1e-12)
    np.testing.assert_allclose(mine.t2, ag["ar_diff"], rtol=1e-12, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(mine.null_t1, t1_null, atol=1e-6)
    np.testing.assert_allclose(mine.null_t2[:, 0], t2_first, atol=1e-5)
    # mean_ag_plot's y_lo/y_hi and ar_diff_plot's ar_lo/ar_hi, with ETOL = 0.1 / n.
    assert mine.t1_band == pytest.approx(
        (np.quantile(t1_null, 0.025), np.quantile(t1_null, 0.975)), abs=1e-6
    )
    assert mine.t2_band == pytest.approx(
        (np.percentile(t2_first, 2.5), np.percentile(t2_first, 97.5)), abs=1e-5
    )
    assert mine.tolerance == pytest.approx(0.1 / n)


def test_t3_equals_bayes_icl_given_the_same_draws() -> None:
    rng = np.random.default_rng(9)
    contexts = [(rng.random(50) < 0.5).astype(int).tolist() for _ in range(3)]
    paths = [laplace().sample_paths(c, rng.random((15, 25))) for c in contexts]
    paths[1][:2] = 1  # two outlying paths for the trimming
    draws = 60  # their 500 (BS_K_EU) for all three contexts twice over would take long
    mine = eu_check(paths, contexts[0], np.random.RandomState(3), draws=draws)
    np.random.seed(3)
    dumps = [
        Dump(np.asarray(c, dtype=float)[:, None], p.astype(float))
        for c, p in zip(contexts, paths, strict=True)
    ]
    ag, bs, _ = _quiet(_compute_ag_stats_and_bootstrap, dumps, BS_K=draws)
    # plot_scaling_main: iqrs_mp per dump, iqrs_bayes from the first dump's reference draws.
    iqrs_mp = [_iqr(d["noisy_MP_params"]) for d in ag]
    iqrs_bayes = [_iqr(d["noisy_MP_params"]) for d in bs[0]]
    np.testing.assert_allclose(mine["per_context"], iqrs_mp, atol=1e-12)
    assert mine["kept"][1] < 15  # the trimming removed the outlying paths
    assert mine["bayes_icl_T3"] == pytest.approx(np.median(iqrs_mp), abs=1e-12)
    assert mine["bayes_icl_ref"] == pytest.approx(np.median(iqrs_bayes), abs=1e-6)
    low, high = np.quantile(iqrs_bayes, [0.025, 0.975])
    assert (mine["bayes_icl_ref_low"], mine["bayes_icl_ref_high"]) == pytest.approx(
        (low, high), abs=1e-6
    )


@pytest.mark.parametrize(
    "predictor", [laplace(), pytest.param(BetaBernoulli(11, 11), marks=pytest.mark.slow)]
)
def test_exchangeable_paths_alarm_at_most_at_the_stated_rate(predictor) -> None:  # type: ignore[no-untyped-def]
    # 48 independent contexts and path sets (n = 20, 20 paths of 20 bits), bayes_icl's bands:
    # each statistic is outside its 95% band ± 0.1/n about 5% of the time, so about 2.4 of 48
    # for T1 (P(≥ 8) < 0.3%) and 9.6 of 192 for T2; and the family reading (12 grids of four
    # settings) says "more than chance" at most at its 5% level (P(≥ 3 of 12) ≈ 2%).
    rng = np.random.default_rng(2024)
    checks = []
    for _ in range(48):
        context = (rng.random(20) < 0.3).astype(int).tolist()
        checks.append(mp_check(predictor.sample_paths(context, rng.random((20, 20))), context, rng))
    assert sum(c.t1_alarm() for c in checks) <= 7
    assert sum(sum(c.t2_alarms()) for c in checks) <= 20
    for statistic in ("T1", "T2"):
        grids = [alarm_count(checks[i : i + 4], statistic) for i in range(0, 48, 4)]
        assert sum(g.p <= 0.05 for g in grids) <= 2


def test_a_recency_biased_predictor_raises_more_alarms_than_chance() -> None:
    rng = np.random.default_rng(8)
    checks = []
    for _ in range(4):
        context = (rng.random(20) < 0.3).astype(int).tolist()
        paths = Recency(0.6).sample_paths(context, rng.random((30, 40)))
        checks.append(mp_check(paths, context, rng))
    count = alarm_count(checks, "T1")
    assert count.alarms > count.chance
    assert count.verdict(0.05, 0.05)[0] == "reproduced"


def test_the_result_sets_both_definitions_side_by_side() -> None:
    r = falck_tests(laplace(), **FALCK_QUICK)
    frame = r.to_frame()
    assert {"bayes_icl definition", "cotplan exact band"} <= set(frame.columns)
    # Per setting: T1, then five differences of which bayes_icl defines four.
    assert len(frame) == len(r.t1t2) * 6
    lag6 = frame[frame["statistic"] == "T2 lag 6 − lag 1"]
    assert lag6["bayes_icl definition"].isna().all()
    assert lag6["cotplan exact band"].notna().all()
    rows = r.versus_paper()
    assert "bayes_icl" in rows.iloc[1]["claim"]
    assert rows.iloc[3]["verdict"] == "cotplan check"
    assert "exact band" in rows.iloc[3]["claim"]
    # T3 with two contexts per n: the median, with the range across contexts beside it.
    assert (r.t3["contexts"] == 2).all()
    assert (r.t3["iqr_context_low"] <= r.t3["iqr"]).all()
    assert (r.t3["iqr"] <= r.t3["iqr_context_high"]).all()
    assert len(r.t3_contexts) == 2 * len(r.t3)
    assert COMMIT in (falck_reference.__doc__ or "")


def test_t3_contexts_must_be_a_positive_integer() -> None:
    with pytest.raises(InputError, match="`t3_contexts`: must be a positive integer"):
        falck_tests(laplace(), t3_contexts=0)
