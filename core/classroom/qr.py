"""The join link as a QR code for the projector (segno: pure Python, no image library needed)."""

from __future__ import annotations

import io

import segno


def qr_png(link: str, scale: int = 10) -> bytes:
    """A PNG of the QR code of `link`, black on white with the standard quiet zone (4 modules),
    error correction M (readable from a projector with some glare)."""
    code = segno.make(link, error="m", micro=False)
    buffer = io.BytesIO()
    code.save(buffer, kind="png", scale=scale, border=4, dark="#000000", light="#ffffff")
    return buffer.getvalue()
