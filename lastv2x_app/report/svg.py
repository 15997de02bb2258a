"""Inline SVG charts for the report: no script, no font file, no request; text is escaped.

One chart type with layers (bands, series, step strips, markers, reference lines) covers
the report's plots; :func:`map_view` draws a plan view (cells, polygons, paths, points).
Coordinates are data units; the chart maps them to pixels and keeps a margin for the
axes. Colours are fixed per meaning (:data:`PHASE_COLOURS`, :data:`ROLLOUT_COLOURS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

PHASE_COLOURS = {0: "#2e9e44", 1: "#f2b705", 2: "#d62828"}  # green, amber, red
PHASE_NAMES = {0: "green", 1: "amber", 2: "red"}
ROLLOUT_COLOURS = {"md": "#e4572e", "gt": "#17607d"}  # message-driven ego, ground-truth ego
ROLLOUT_NAMES = {"md": "message-driven ego", "gt": "ground-truth ego"}
EPISODE_COLOUR = "#8e44ad"
FAULT_COLOUR = "#ff8c00"


def nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + k * step, 10) for k in range(int((hi - first) / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 or v == int(v) else f"{v:g}"


@dataclass
class Chart:
    """A 2-D chart: add layers, then :meth:`svg`."""

    title: str
    x_label: str
    y_label: str
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    width: int = 860
    height: int = 320
    margin: tuple[int, int, int, int] = (64, 20, 44, 62)  # top, right, bottom, left (title + 2 legend rows)
    y_ticks: bool = True
    _layers: list[str] = field(default_factory=list)
    _legend: list[tuple[str, str, str]] = field(default_factory=list)  # colour, label, kind

    def _x(self, x: float) -> float:
        lo, hi = self.x_range
        t, r, b, left = self.margin
        return left + (x - lo) / ((hi - lo) or 1.0) * (self.width - left - r)

    def _y(self, y: float) -> float:
        lo, hi = self.y_range
        t, r, b, left = self.margin
        return self.height - b - (y - lo) / ((hi - lo) or 1.0) * (self.height - t - b)

    def _clip_y(self, y: float) -> float:
        return min(max(y, self.y_range[0]), self.y_range[1])

    def legend(self, colour: str, label: str, kind: str = "line") -> None:
        if (colour, label, kind) not in self._legend:
            self._legend.append((colour, label, kind))

    def band_x(self, x0: float, x1: float, colour: str, opacity: float = 0.18, label: str = "",
               y0: float | None = None, y1: float | None = None, tip: str = "") -> None:
        """A shaded span of x (full height, or between y0 and y1)."""
        xa, xb = self._x(max(x0, self.x_range[0])), self._x(min(x1, self.x_range[1]))
        if xb <= xa:
            return
        ya = self._y(self._clip_y(y1)) if y1 is not None else self.margin[0]
        yb = self._y(self._clip_y(y0)) if y0 is not None else self.height - self.margin[2]
        title = f"<title>{escape(tip)}</title>" if tip else ""
        self._layers.append(f'<rect x="{xa:.1f}" y="{ya:.1f}" width="{xb - xa:.1f}" height="{max(yb - ya, 1):.1f}" '
                            f'fill="{colour}" fill-opacity="{opacity}">{title}</rect>')
        if label:
            self.legend(colour, label, "band")

    def series(self, xs: Sequence[float], ys: Sequence[float], colour: str, label: str = "",
               width: float = 2.0, dash: str = "") -> None:
        pts = [(self._x(x), self._y(self._clip_y(y))) for x, y in zip(xs, ys, strict=True)
               if math.isfinite(x) and math.isfinite(y)]
        if len(pts) < 2:
            return
        d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        self._layers.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="{width}"'
                            f'{dash_attr} stroke-linejoin="round"/>')
        if label:
            self.legend(colour, label)

    def hline(self, y: float, colour: str = "#555", label: str = "", dash: str = "4 3") -> None:
        if not self.y_range[0] <= y <= self.y_range[1]:
            return
        t, r, b, left = self.margin
        self._layers.append(f'<line x1="{left}" x2="{self.width - r}" y1="{self._y(y):.1f}" y2="{self._y(y):.1f}" '
                            f'stroke="{colour}" stroke-dasharray="{dash}"/>')
        if label:
            self._layers.append(f'<text x="{self.width - r - 4}" y="{self._y(y) - 4:.1f}" text-anchor="end" '
                                f'font-size="11" fill="{colour}">{escape(label)}</text>')

    def marker(self, x: float, y: float, colour: str, label: str = "", tip: str = "", shape: str = "circle") -> None:
        if not (math.isfinite(x) and math.isfinite(y)):
            return
        px, py = self._x(x), self._y(self._clip_y(y))
        title = f"<title>{escape(tip)}</title>" if tip else ""
        if shape == "diamond":
            self._layers.append(f'<path d="M{px:.1f},{py - 6:.1f} L{px + 6:.1f},{py:.1f} L{px:.1f},{py + 6:.1f} '
                                f'L{px - 6:.1f},{py:.1f} Z" fill="{colour}" stroke="#fff">{title}</path>')
        else:
            self._layers.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4.5" fill="{colour}" stroke="#fff">'
                                f'{title}</circle>')
        if label:
            self.legend(colour, label, "marker")

    def bars(self, xs: Sequence[float], ys: Sequence[float], colours: Sequence[str], width_x: float,
             tips: Sequence[str] = ()) -> None:
        base = self._y(self._clip_y(0.0))
        for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
            xa, xb = self._x(x - width_x / 2), self._x(x + width_x / 2)
            py = self._y(self._clip_y(y))
            tip = f"<title>{escape(tips[k])}</title>" if k < len(tips) else ""
            self._layers.append(f'<rect x="{xa:.1f}" y="{min(py, base):.1f}" width="{xb - xa:.1f}" '
                                f'height="{max(abs(base - py), 1):.1f}" fill="{colours[k]}">{tip}</rect>')

    def svg(self) -> str:
        t, r, b, left = self.margin
        w, h = self.width, self.height
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
               f'role="img" aria-label="{escape(self.title)}" class="chart">',
               f'<rect x="0" y="0" width="{w}" height="{h}" fill="#fff"/>',
               f'<text x="{left}" y="18" font-size="13" font-weight="600">{escape(self.title)}</text>']
        for tx in nice_ticks(*self.x_range):
            x = self._x(tx)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{t}" y2="{h - b}" stroke="#eee"/>'
                       f'<text x="{x:.1f}" y="{h - b + 15}" text-anchor="middle" font-size="11">{_fmt(tx)}</text>')
        for ty in nice_ticks(*self.y_range) if self.y_ticks else []:
            y = self._y(ty)
            out.append(f'<line x1="{left}" x2="{w - r}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                       f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{_fmt(ty)}</text>')
        out.extend(self._layers)
        out.append(f'<rect x="{left}" y="{t}" width="{w - left - r}" height="{h - t - b}" fill="none" stroke="#888"/>')
        out.append(f'<text x="{(left + w - r) / 2:.0f}" y="{h - 8}" text-anchor="middle" font-size="12">'
                   f'{escape(self.x_label)}</text>')
        out.append(f'<text x="14" y="{(t + h - b) / 2:.0f}" text-anchor="middle" font-size="12" '
                   f'transform="rotate(-90 14 {(t + h - b) / 2:.0f})">{escape(self.y_label)}</text>')
        lx, ly = float(left), 36
        for colour, label, kind in self._legend:
            if lx + 26 + 6.2 * len(label) > w - r and lx > left:  # wrap to the second row
                lx, ly = float(left), ly + 16
            sym = (f'<rect x="{lx:.0f}" y="{ly - 9}" width="14" height="10" fill="{colour}" fill-opacity="0.5"/>'
                   if kind == "band" else f'<circle cx="{lx + 7:.0f}" cy="{ly - 4}" r="4.5" fill="{colour}"/>'
                   if kind == "marker" else f'<line x1="{lx:.0f}" x2="{lx + 14:.0f}" y1="{ly - 4}" y2="{ly - 4}" '
                                            f'stroke="{colour}" stroke-width="3"/>')
            out.append(sym + f'<text x="{lx + 18:.0f}" y="{ly}" font-size="11">{escape(label)}</text>')
            lx += 26 + 6.2 * len(label)
        out.append("</svg>")
        return "".join(out)


def map_view(title: str, bounds: tuple[float, float, float, float], *, cells: Sequence[tuple[float, float, float, str]] = (),
             polygons: Sequence[Sequence[tuple[float, float]]] = (), paths: Sequence[tuple[Sequence[tuple[float, float]], str, str]] = (),
             points: Sequence[tuple[float, float, str, str]] = (), legend: Sequence[tuple[str, str]] = (),
             size_px: int = 520) -> str:
    """A plan view (x east, y north): ``cells`` (x0, y0, size_m, colour), building ``polygons``,
    ``paths`` (points, colour, label), ``points`` (x, y, colour, label)."""
    x0, y0, x1, y1 = bounds
    span = max(x1 - x0, y1 - y0, 1.0)
    pad = 28
    scale = (size_px - 2 * pad) / span
    width = max(int((x1 - x0) * scale) + 2 * pad, 360)  # the view keeps the scene's aspect ratio
    height = int((y1 - y0) * scale) + 2 * pad

    def px(x: float, y: float) -> tuple[float, float]:
        return pad + (x - x0) * scale, height - pad - (y - y0) * scale

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height + 40}" width="{width}" '
           f'height="{height + 40}" role="img" aria-label="{escape(title)}" class="map">',
           f'<rect width="{width}" height="{height + 40}" fill="#fff"/>',
           f'<text x="{pad}" y="18" font-size="12" font-weight="600">{escape(title)}</text>']
    for cx, cy, size, colour in cells:
        ax, ay = px(cx, cy + size)
        out.append(f'<rect x="{ax:.1f}" y="{ay:.1f}" width="{size * scale + 0.3:.1f}" height="{size * scale + 0.3:.1f}" '
                   f'fill="{colour}"/>')
    for poly in polygons:
        d = " ".join(f"{a:.1f},{b:.1f}" for a, b in (px(x, y) for x, y in poly))
        out.append(f'<polygon points="{d}" fill="#9aa0a6" fill-opacity="0.55" stroke="#5f6368" stroke-width="0.6"/>')
    for pts, colour, _label in paths:
        d = " ".join(f"{a:.1f},{b:.1f}" for a, b in (px(x, y) for x, y in pts))
        out.append(f'<polyline points="{d}" fill="none" stroke="{colour}" stroke-width="2.5"/>')
    for x, y, colour, label in points:
        a, b = px(x, y)
        out.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="5" fill="{colour}" stroke="#000"><title>{escape(label)}'
                   f'</title></circle><text x="{a + 7:.1f}" y="{b - 6:.1f}" font-size="11">{escape(label)}</text>')
    # scale bar: a round length near a quarter of the view
    bar_m = max(v for v in (5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000) if v <= max(span / 4, 5))
    out.append(f'<line x1="{pad}" x2="{pad + bar_m * scale:.1f}" y1="{height - 8}" y2="{height - 8}" '
               f'stroke="#000" stroke-width="2"/><text x="{pad}" y="{height - 12}" font-size="10">'
               f'{_fmt(bar_m)} m</text>')
    lx, ly = float(pad), height + 14
    for colour, label in legend:
        if lx + 24 + 6.2 * len(label) > width:
            lx, ly = float(pad), ly + 14
        out.append(f'<rect x="{lx:.0f}" y="{ly}" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{lx + 16:.0f}" y="{ly + 10}" font-size="11">{escape(label)}</text>')
        lx += 24 + 6.2 * len(label)
    out.append("</svg>")
    return "".join(out)


__all__ = ["EPISODE_COLOUR", "FAULT_COLOUR", "PHASE_COLOURS", "PHASE_NAMES", "ROLLOUT_COLOURS", "ROLLOUT_NAMES",
           "Chart", "map_view", "nice_ticks"]
