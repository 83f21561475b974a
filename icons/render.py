"""Render the tray icons (PNG) from the same geometry as their SVG sources, with no dependencies.

Run `python icons/render.py` after changing a colour or the geometry; it rewrites both the SVG
sources and the PNGs (16, 22, 32 and 64 px: tray sizes on every platform, 64 for notifications and
the app) so they never drift apart.
"""

import struct
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATES = {"healthy": (46, 157, 91), "degraded": (224, 161, 0), "paused": (138, 143, 152)}
# Geometry on a 64-unit canvas: an outer disc in the state's colour, a white ring of three
# "memory" dots around a centre dot.
OUTER = (32, 32, 30)
SIZES = (16, 22, 32, 64)
DOTS = [(32, 32, 7), (32, 14, 5), (47.6, 41, 5), (16.4, 41, 5)]


def svg(color) -> str:
    fill = "#%02x%02x%02x" % color
    dots = "".join(f'<circle cx="{x}" cy="{y}" r="{r}" fill="#ffffff"/>' for x, y, r in DOTS)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">'
            f'<circle cx="{OUTER[0]}" cy="{OUTER[1]}" r="{OUTER[2]}" fill="{fill}"/>{dots}</svg>\n')


def coverage(px, py, cx, cy, r, scale, samples=4) -> float:
    """Share of a pixel inside a circle (supersampled, for smooth edges)."""
    inside = 0
    for i in range(samples):
        for j in range(samples):
            x = (px + (i + 0.5) / samples) / scale
            y = (py + (j + 0.5) / samples) / scale
            inside += (x - cx) ** 2 + (y - cy) ** 2 <= r * r
    return inside / (samples * samples)


def png(color, size: int) -> bytes:
    scale = size / 64
    rows = []
    for py in range(size):
        row = bytearray([0])
        for px in range(size):
            a = coverage(px, py, *OUTER, scale)
            white = max(coverage(px, py, x, y, r, scale) for x, y, r in DOTS)
            rgb = [round(c * (1 - white) + 255 * white) for c in color]
            row += bytes(rgb + [round(255 * a)])
        rows.append(bytes(row))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))


def main(target: Path = HERE) -> None:
    for state, color in STATES.items():
        (target / f"keepmind-{state}.svg").write_text(svg(color), encoding="utf-8")
        for size in SIZES:
            (target / f"keepmind-{state}-{size}.png").write_bytes(png(color, size))


if __name__ == "__main__":
    main()
