"""The experiments' charts render offline with vl-convert, for exact and order-dependent
predictors alike."""

from __future__ import annotations

import pytest
import vl_convert as vlc

from cotplan.charts import chart
from cotplan.research.experiments import PRESETS, Recency, laplace
from cotplan.research.experiments.order import order_variance


def _render(result: object) -> tuple[str, bytes]:
    spec = chart(result).to_json()
    svg: str = vlc.vegalite_to_svg(spec)
    # The PNG is what `save` writes; it is where an empty log axis failed.
    png: bytes = vlc.vegalite_to_png(spec)
    return svg, png


@pytest.mark.parametrize("predictor", [laplace(), Recency(0.9)], ids=["laplace", "recency"])
def test_order_chart_renders(predictor: object) -> None:
    # Laplace is exchangeable: every spread is exactly 0, which a log axis cannot draw (the
    # chart used to fail in vl-convert with "SVG has an invalid size").
    result = order_variance(predictor, **PRESETS["quick"]["order"])  # type: ignore[arg-type]
    frame = result.to_frame()
    exchangeable = bool((frame["sd"] == 0).all())
    assert exchangeable == (predictor.__class__.__name__ != "Recency")
    svg, png = _render(result)
    assert svg.startswith("<svg")
    assert png.startswith(b"\x89PNG")
    assert "no spread over orderings" in svg if exchangeable else "slope" in svg
