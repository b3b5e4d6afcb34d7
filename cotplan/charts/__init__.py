"""Altair charts, one module per area, all rendering offline (PNG/SVG, inline HTML).

Charts import altair lazily: it is slow to import, and most runs draw nothing.
"""

__all__: list[str] = []
