"""WCAG colour contrast: the ratio of two sRGB colours and a colour moved until it reaches
a ratio. ``web.markdown.make_css`` uses it to make Pygments' colours AA-legible (4.5:1) on
the statement's code background in both themes; the tests check the site's own colours."""

from __future__ import annotations

import re

AA = 4.5  # normal-size text, WCAG 2.x level AA

_HEX = re.compile(r"#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b")


def rgb(colour: str) -> tuple[int, int, int]:
    """``#rrggbb`` or ``#rgb`` as three 0-255 integers."""
    h = colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def luminance(colour: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def ratio(fg: str, bg: str) -> float:
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def legible(fg: str, bg: str, target: float = AA + 0.1) -> str:
    """``fg`` itself when it reaches ``target`` on ``bg``, else ``fg`` mixed step by step
    towards black (on a light background) or white (on a dark one) until it does."""
    toward = 0 if luminance(bg) > 0.18 else 255
    r, g, b = rgb(fg)
    colour = fg
    for step in range(1, 21):
        if ratio(colour, bg) >= target:
            return colour
        w = step / 20
        r2, g2, b2 = (round(c + (toward - c) * w) for c in (r, g, b))
        colour = f"#{r2:02x}{g2:02x}{b2:02x}"
    return colour


def legible_style(definition: str, bg: str) -> str:
    """A Pygments style string ("italic #60a0b0", "bg:#fff0f0 #a00000") with its text
    colour made legible on ``bg``; background and border colours are left alone."""
    parts = []
    for part in definition.split():
        if _HEX.fullmatch(part):
            part = legible(part, bg)
        parts.append(part)
    return " ".join(parts)
