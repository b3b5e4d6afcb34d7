"""Altair charts, one module per area, all rendering offline (PNG/SVG, inline HTML)."""
