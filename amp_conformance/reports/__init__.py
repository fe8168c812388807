"""Reports rendered from a run's JSON report (HTML page; more formats live beside it)."""

from __future__ import annotations

from amp_conformance.reports.html import render_diff_html, render_html

__all__ = ["render_diff_html", "render_html"]
