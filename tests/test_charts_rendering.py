"""What the charts say, read from their Vega-Lite specs: every axis and legend titled in words,
an interval drawn where the result has one, and the faults a referee found (issue 32) kept out:
an unlabelled threshold, a panel titled for what it does not plot, legends of column names or
cut names, fit lines in another series' colour, one dash style for two references, ε lines
that hide one another, axes that leave the data in a corner."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import vl_convert as vlc

from cotplan.charts import chart
from cotplan.research.charts.experiments import debias_chart, entropy_chart, martingale_chart
from cotplan.research.experiments import (
    ENTROPY_QUICK,
    MARTINGALE_QUICK,
    Recency,
    entropy_efficiency,
    laplace,
    martingale_gap,
    positional_debias,
)
from cotplan.research.experiments.debias import DebiasResult
from cotplan.research.experiments.martingale import MartingaleResult

#: Channels that draw an axis or a legend, and so need a title a reader can read.
TITLED = ("x", "y", "color", "strokeDash", "size", "shape")
#: Column names that once reached a legend as they were.
RAW_NAMES = {"gap", "trend + harmonics", "debiased", "residual", "smoothed_residual"}


def units(spec: Any) -> Iterator[dict[str, Any]]:
    """Every single-mark view in a (layered, concatenated) spec."""
    if isinstance(spec, dict):
        if "mark" in spec:
            yield spec
        for value in spec.values():
            yield from units(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from units(value)


def mark_type(unit: dict[str, Any]) -> str:
    mark = unit["mark"]
    return str(mark["type"] if isinstance(mark, dict) else mark)


def untitled(spec: dict[str, Any]) -> list[str]:
    """Channels bound to a field with no title in words (the field name would show instead)."""
    missing = []
    for unit in units(spec):
        for channel in TITLED:
            enc = unit.get("encoding", {}).get(channel)
            if not isinstance(enc, dict) or "field" not in enc:
                continue
            title = enc.get("title")
            if not isinstance(title, str) or not title.strip() or title == enc["field"]:
                missing.append(f"{mark_type(unit)}.{channel} ({enc['field']})")
    return missing


def has_interval(spec: dict[str, Any]) -> bool:
    """An area or rule spanning low to high: a band or an error bar."""
    return any(
        mark_type(u) in {"area", "rule"} and ({"y2", "x2"} & set(u.get("encoding", {})))
        for u in units(spec)
    )


def titles(spec: Any) -> list[str]:
    found: list[str] = []
    if isinstance(spec, dict):
        title = spec.get("title")
        if isinstance(title, str):
            found.append(title)
        elif isinstance(title, dict):
            found.append(str(title.get("text", "")))
            sub = title.get("subtitle", [])
            found.extend([sub] if isinstance(sub, str) else list(sub))
        for key, value in spec.items():
            if key != "title":
                found.extend(titles(value))
    elif isinstance(spec, list):
        for value in spec:
            found.extend(titles(value))
    return found


def renders(chart_obj: Any) -> None:
    assert vlc.vegalite_to_svg(chart_obj.to_json()).startswith("<svg")


@pytest.fixture(scope="module")
def gaps() -> MartingaleResult:
    return martingale_gap(Recency(0.9), reference=laplace(), seed=0, **MARTINGALE_QUICK)


@pytest.fixture(scope="module")
def debiased(gaps: MartingaleResult) -> DebiasResult:
    return positional_debias(gaps, n_boot=20, n_permutations=39, seed=0)


def test_the_spec_walker_catches_an_untitled_axis_and_a_missing_band() -> None:
    # The checks below are only worth their passes if they can fail.
    import altair as alt
    import pandas as pd

    bare = alt.Chart(pd.DataFrame({"n": [1, 2], "v": [0.1, 0.2]})).mark_line()
    spec = bare.encode(x="n:Q", y=alt.Y("v:Q", title="v")).to_dict()
    assert untitled(spec) == ["line.x (n)", "line.y (v)"]
    assert not has_interval(spec)


def test_martingale_chart_titles_intervals_and_fit_colours(gaps: MartingaleResult) -> None:
    spec = martingale_chart(gaps).to_dict()
    assert untitled(spec) == []
    assert has_interval(spec)
    # The fits are drawn per series, in that series' colour: the line layer is coloured by the
    # same field and scale as the points, and holds both series' fits.
    lines = [u for u in units(spec) if mark_type(u) == "line" and "strokeDash" in u["encoding"]]
    assert lines
    assert lines[0]["encoding"]["color"]["field"] == "who"
    domain = lines[0]["encoding"]["color"]["scale"]["domain"]
    assert domain == [gaps.predictor, f"{gaps.reference} (exact Bayes)"]
    fit_rows = spec["datasets"][lines[0]["data"]["name"]]
    assert {row["who"] for row in fit_rows} == set(domain)
    renders(martingale_chart(gaps))


def test_debias_chart_speaks_words_and_says_not_significant(debiased: DebiasResult) -> None:
    spec = debias_chart(debiased).to_dict()
    assert untitled(spec) == []
    legend_values = {
        row["series"] for rows in spec["datasets"].values() for row in rows if "series" in row
    }
    assert legend_values
    assert not legend_values & RAW_NAMES
    for verdict, p in (("not significant", 0.565), ("significant", 0.01)):
        heading = titles(debias_chart(dataclasses.replace(debiased, p_value=p)).to_dict())[0]
        assert f", {verdict} (p = {p:.3g}" in heading
    if debiased.standard_errors is not None:
        assert has_interval(spec)
    renders(debias_chart(debiased))


def test_entropy_chart_labels_the_threshold_draws_the_band_and_titles_what_it_plots() -> None:
    result = entropy_efficiency(Recency(0.9), seed=0, **ENTROPY_QUICK)
    spec = entropy_chart(result).to_dict()
    assert untitled(spec) == []
    assert has_interval(spec)  # the model's sampled curve has standard errors
    texts = [u for u in units(spec) if mark_type(u) == "text"]
    assert any(f"{result.threshold:g}" in u["encoding"]["text"]["value"] for u in texts)
    right = spec["hconcat"][1]
    assert "n·H / code length" in str(right["title"])
    assert right["encoding"]["y"]["title"].startswith("n·H / code length")
    # The model's name is long: the legend must not cut it.
    legends = [
        u["encoding"]["color"].get("legend", {}) for u in units(spec) if "color" in u["encoding"]
    ]
    assert legends
    assert all(legend.get("labelLimit") == 0 for legend in legends)
    renders(entropy_chart(result))


def test_chart_dispatch_draws_the_fixed_charts(gaps: MartingaleResult) -> None:
    assert untitled(chart(gaps).to_dict()) == []


@pytest.fixture(scope="module")
def study() -> Any:
    torch = pytest.importorskip("torch")
    from cotplan.research.lab.reasoning import LabBackend, load_or_train, reasoning_study

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return reasoning_study(
            "parity", "tiny", backend=LabBackend(load_or_train("parity", "tiny"))
        )
    finally:
        torch.set_num_threads(threads)


# The lab study needs torch and about half a minute on one thread.
@pytest.mark.slow
class TestLabReasoningCharts:
    def test_error_grid_has_intervals_and_item_counts(self, study: Any) -> None:
        from cotplan.research.charts.lab_reasoning import error_grid_chart

        spec = error_grid_chart(study).to_dict()
        assert untitled(spec) == []
        assert has_interval(spec)
        grid = study.to_frame()
        labels = set(
            next(
                u["encoding"]["color"]["scale"]["domain"]
                for u in units(spec)
                if "color" in u["encoding"]
            )
        )
        for n, cells in grid.groupby("n"):
            assert f"n = {n} ({cells['answers'].max()} items)" in labels
        renders(error_grid_chart(study))

    def test_budget_law_chart_tells_its_lines_apart_and_fits_its_axes(self, study: Any) -> None:
        from cotplan.research.charts.lab_reasoning import budget_law_chart

        spec = budget_law_chart(study).to_dict()
        assert untitled(spec) == []
        dash = next(
            u["encoding"]["strokeDash"]["scale"]
            for u in units(spec)
            if "strokeDash" in u["encoding"]
        )
        styles = dict(zip(dash["domain"], map(tuple, dash["range"]), strict=True))
        trace = next(v for k, v in styles.items() if "3n + 2" in k)
        root = next(v for k, v in styles.items() if "√n" in k)
        assert trace != root
        assert len(set(styles.values())) == len(styles)
        # Each ε: its own colour label and its own ring size, so coinciding lines stay visible.
        colour = next(
            u["encoding"]["color"]["scale"] for u in units(spec) if "color" in u["encoding"]
        )
        sizes = next(u["encoding"]["size"]["scale"] for u in units(spec) if "size" in u["encoding"])
        eps = sorted(set(study.law_frame()["eps"]))
        assert len(colour["domain"]) == len(eps)
        assert all("ε =" in d for d in colour["domain"])
        assert len(set(sizes["range"])) == len(eps)
        # The axes span the data, not the decades around them.
        table = study.law_frame()
        values = [*table["k"], *table["trace_tokens"], *table["sqrt_law_k"]]
        y = next(u["encoding"]["y"]["scale"] for u in units(spec) if "y" in u["encoding"])
        assert y["nice"] is False
        assert min(values) / 1.2 < y["domain"][0] <= min(values)
        assert max(values) <= y["domain"][1] < max(values) * 1.2
        assert any("coincide" in t for t in titles(spec))
        renders(budget_law_chart(study))
