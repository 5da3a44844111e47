"""A minimal line-chart SVG writer for the benchmark plots (string building, no plotting library).

Why by hand: the benchmarks need one or two small figures for the README, and matplotlib is
not a dependency of the project. The chart is deliberately plain: title, axes with "nice"
ticks and grid lines, one line with markers per series, an optional shaded band per series
(e.g. the spread across folds), a legend row under the title and an optional note under the
x axis. All text is XML-escaped, so series names may contain ``<``, ``&`` or quotes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

__all__ = ["LineChart", "Series", "line_chart_svg", "nice_ticks", "write_line_chart"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")
MARKERS = ("circle", "square", "diamond", "triangle")
X_TICKS, Y_TICKS = 8, 8  # about this many ticks per axis
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


@dataclass(frozen=True)
class Series:
    """One line: points (x[i], y[i]); ``lower``/``upper`` (same length) draw a shaded band when both are given."""

    name: str
    x: Sequence[float]
    y: Sequence[float]
    lower: Sequence[float] | None = None
    upper: Sequence[float] | None = None
    color: str = ""  # "" takes the next palette colour


@dataclass(frozen=True)
class LineChart:
    """What to draw. ``y_range`` None fits the data (bands included); ``note`` is a caption under the x axis."""

    title: str
    x_label: str
    y_label: str
    series: Sequence[Series]
    width: int = 860
    height: int = 540
    y_range: tuple[float, float] | None = None
    note: str = ""


@dataclass(frozen=True)
class _Frame:
    """Pixel box of the plotting area and the data ranges it maps."""

    left: float
    top: float
    right: float
    bottom: float
    x_low: float
    x_high: float
    y_low: float
    y_high: float

    def px(self, x: float) -> float:
        return self.left + (x - self.x_low) / (self.x_high - self.x_low) * (self.right - self.left)

    def py(self, y: float) -> float:
        return self.bottom - (y - self.y_low) / (self.y_high - self.y_low) * (self.bottom - self.top)


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """About ``count`` round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)) or high < low:
        raise ValueError(f"tick range must be finite with low <= high, got {low} .. {high}")
    if count < 2:
        raise ValueError(f"count must be >= 2, got {count}")
    if high == low:
        high = low + 1.0
    raw = (high - low) / (count - 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(power * f for f in (1.0, 2.0, 2.5, 5.0, 10.0) if power * f >= raw * 0.999)
    first = math.floor(low / step + 1e-9) * step
    ticks = [round(first, 10)]
    while ticks[-1] < high - step * 1e-6 or len(ticks) < 2:  # the last tick is >= high: the ticks cover the data
        ticks.append(round(first + len(ticks) * step, 10))
    return ticks


def line_chart_svg(chart: LineChart) -> str:
    """The chart as a standalone SVG document (a string); ValueError on empty or ragged series."""
    _check(chart)
    frame = _frame(chart)
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{chart.width}" height="{chart.height}" '
            f'viewBox="0 0 {chart.width} {chart.height}">'
        ),
        f'<rect x="0" y="0" width="{chart.width}" height="{chart.height}" fill="white"/>',
        (
            f'<text x="{chart.width / 2:.1f}" y="30" text-anchor="middle" font-size="18" font-weight="bold" {FONT}>'
            f"{escape(chart.title)}</text>"
        ),
    ]
    parts += _axes(chart, frame)
    colors = [series.color or PALETTE[index % len(PALETTE)] for index, series in enumerate(chart.series)]
    parts.append(
        f'<clipPath id="plot-area"><rect x="{frame.left}" y="{frame.top}" width="{frame.right - frame.left}" '
        f'height="{frame.bottom - frame.top}"/></clipPath>'
    )
    parts.append('<g clip-path="url(#plot-area)">')  # a fixed y_range may cut the data: nothing is drawn outside the axes
    for series, color in zip(chart.series, colors):  # bands first, so every line lies on top of every band
        if series.lower is not None and series.upper is not None:
            upper = [(frame.px(x), frame.py(y)) for x, y in zip(series.x, series.upper)]
            lower = [(frame.px(x), frame.py(y)) for x, y in zip(series.x, series.lower)]
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in upper + lower[::-1])
            parts.append(f'<polygon points="{points}" fill={quoteattr(color)} fill-opacity="0.13" stroke="none"/>')
    for index, (series, color) in enumerate(zip(chart.series, colors)):
        points = " ".join(f"{frame.px(x):.1f},{frame.py(y):.1f}" for x, y in zip(series.x, series.y))
        parts.append(f'<polyline points="{points}" fill="none" stroke={quoteattr(color)} stroke-width="2.2"/>')
        parts += [_marker(MARKERS[index % len(MARKERS)], frame.px(x), frame.py(y), color) for x, y in zip(series.x, series.y)]
    parts.append("</g>")
    parts += _legend(chart, colors)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_line_chart(chart: LineChart, path: str | Path) -> Path:
    """Write :func:`line_chart_svg` to ``path`` (parent folders created) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(line_chart_svg(chart), encoding="utf-8")
    return path


def _check(chart: LineChart) -> None:
    if not chart.series:
        raise ValueError(f"chart {chart.title!r} has no series")
    for series in chart.series:
        if not series.x or len(series.x) != len(series.y):
            raise ValueError(f"series {series.name!r}: needs x and y of the same non-zero length, got {len(series.x)} and {len(series.y)}")
        if (series.lower is None) != (series.upper is None):
            raise ValueError(f"series {series.name!r}: give both lower and upper for a band, or neither")
        for name, values in (("x", series.x), ("y", series.y), ("lower", series.lower or []), ("upper", series.upper or [])):
            if name in ("lower", "upper") and series.lower is not None and len(values) != len(series.x):
                raise ValueError(f"series {series.name!r}: {name} has {len(values)} values for {len(series.x)} points")
            if not all(math.isfinite(float(v)) for v in values):
                raise ValueError(f"series {series.name!r}: {name} has a value that is not finite")
    if chart.y_range is not None and not chart.y_range[0] < chart.y_range[1]:
        raise ValueError(f"y_range must be (low, high) with low < high, got {chart.y_range}")


def _frame(chart: LineChart) -> _Frame:
    xs = [float(x) for series in chart.series for x in series.x]
    if chart.y_range is not None:
        y_low, y_high = chart.y_range
    else:
        ys = [float(y) for s in chart.series for values in (s.y, s.lower or [], s.upper or []) for y in values]
        y_ticks = nice_ticks(min(ys), max(ys), Y_TICKS)
        y_low, y_high = y_ticks[0], y_ticks[-1]
    x_low, x_high = min(xs), max(xs)  # the data's own x range: no empty strip after the last point ...
    pad = 0.02 * (x_high - x_low) if x_high > x_low else 0.5
    x_low, x_high = x_low - pad, x_high + pad  # ... but wide enough that the end markers are not cut in half
    bottom_margin = 72 if chart.note else 58
    return _Frame(78, 84, chart.width - 30, chart.height - bottom_margin, x_low, x_high, y_low, y_high)


def _axes(chart: LineChart, frame: _Frame) -> list[str]:
    parts = []
    for tick in nice_ticks(frame.x_low, frame.x_high, X_TICKS):
        if not frame.x_low - 1e-9 <= tick <= frame.x_high + 1e-9:
            continue
        x = frame.px(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{frame.top}" x2="{x:.1f}" y2="{frame.bottom}" stroke="#e3e3e3"/>')
        parts.append(f'<text x="{x:.1f}" y="{frame.bottom + 18}" text-anchor="middle" font-size="12" {FONT}>{_label(tick)}</text>')
    for tick in nice_ticks(frame.y_low, frame.y_high, Y_TICKS):
        if not frame.y_low - 1e-9 <= tick <= frame.y_high + 1e-9:
            continue
        y = frame.py(tick)
        parts.append(f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.right}" y2="{y:.1f}" stroke="#e3e3e3"/>')
        parts.append(f'<text x="{frame.left - 8}" y="{y + 4:.1f}" text-anchor="end" font-size="12" {FONT}>{_label(tick)}</text>')
    width, height = frame.right - frame.left, frame.bottom - frame.top
    parts.append(f'<rect x="{frame.left}" y="{frame.top}" width="{width}" height="{height}" fill="none" stroke="#444"/>')
    centre_x, centre_y = (frame.left + frame.right) / 2, (frame.top + frame.bottom) / 2
    parts.append(
        f'<text x="{centre_x:.1f}" y="{frame.bottom + 42}" text-anchor="middle" font-size="14" {FONT}>{escape(chart.x_label)}</text>'
    )
    parts.append(
        f'<text x="22" y="{centre_y:.1f}" text-anchor="middle" font-size="14" transform="rotate(-90 22 {centre_y:.1f})" {FONT}>'
        f"{escape(chart.y_label)}</text>"
    )
    if chart.note:
        parts.append(
            f'<text x="{centre_x:.1f}" y="{chart.height - 12}" text-anchor="middle" font-size="11" fill="#555" {FONT}>{escape(chart.note)}</text>'
        )
    return parts


def _legend(chart: LineChart, colors: list[str]) -> list[str]:
    """One row of (marker, line, name) entries under the title, centred; width estimated from the text length."""
    widths = [44 + 7.2 * len(series.name) for series in chart.series]
    x = (chart.width - sum(widths) - 20 * (len(widths) - 1)) / 2
    parts = []
    for index, (series, color, width) in enumerate(zip(chart.series, colors, widths)):
        parts.append(f'<line x1="{x:.1f}" y1="58" x2="{x + 30:.1f}" y2="58" stroke={quoteattr(color)} stroke-width="2.2"/>')
        parts.append(_marker(MARKERS[index % len(MARKERS)], x + 15, 58, color))
        parts.append(f'<text x="{x + 38:.1f}" y="62.5" font-size="13" {FONT}>{escape(series.name)}</text>')
        x += width + 20
    return parts


def _marker(shape: str, x: float, y: float, color: str) -> str:
    fill = quoteattr(color)
    if shape == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill={fill}/>'
    if shape == "diamond":
        return f'<polygon points="{x:.1f},{y - 5.5:.1f} {x + 5.5:.1f},{y:.1f} {x:.1f},{y + 5.5:.1f} {x - 5.5:.1f},{y:.1f}" fill={fill}/>'
    if shape == "triangle":
        return f'<polygon points="{x:.1f},{y - 5.5:.1f} {x + 5:.1f},{y + 4:.1f} {x - 5:.1f},{y + 4:.1f}" fill={fill}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill={fill}/>'


def _label(value: float) -> str:
    """Tick label without float noise: 0.3, not 0.30000000000000004; integers without a decimal point."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")
