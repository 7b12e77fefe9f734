"""Formatting that only the pages need: LaTeX with the actual numbers, HTML token chips, table styles.

Kept out of core/ (which computes) so that a lesson module holds numbers, and the way they are
written on screen lives here, next to the Streamlit pages that use it.
"""

from __future__ import annotations

import html
import math
from typing import Mapping, Sequence

import pandas as pd

from core.data import IGNORE_INDEX
from core.lessons.embeddings import MAX_TOKEN_CHARS
from core.lessons.tokens_data import TokenChip
from core.lessons.walkthrough import fmt_number
from core.viz.text_width import text_em

def latex_number(value: float, decimals: int = 4) -> str:
    """A number for st.latex: 1.23 \\times 10^{30} instead of 1.23e+30."""
    text = fmt_number(value, decimals)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return rf"{mantissa} \times 10^{{{int(exponent)}}}"
    return text.replace("−∞", r"-\infty")


def latex_text(name: str) -> str:
    """A token name safe inside \\text{...}."""
    out = []
    for ch in name[:MAX_TOKEN_CHARS]:
        if ch in "\\":
            out.append(r"\textbackslash{}")
        elif ch in "{}_^#$%&~":
            out.append("\\" + ch if ch not in "^~" else {"^": r"\^{}", "~": r"\~{}"}[ch])
        else:
            out.append(ch)
    return "".join(out)


def dot_product_latex(query: Sequence[float], key: Sequence[float], result: float,
                      i: int, j: int, max_terms: int = 4) -> str:
    """ω_ij = x^(i) · x^(j) written out with the actual numbers, one line per step (first terms only)."""
    terms = [rf"{latex_number(a, 2)} \cdot {latex_number(b, 2)}"
             for a, b in zip(query[:max_terms], key[:max_terms])]
    if len(query) > max_terms:
        terms.append(rf"\dots\ (\text{{{len(query) - max_terms} more}})")
    return (rf"\begin{{aligned}} \omega_{{{i}{j}}} &= x^{{({i})}} \cdot x^{{({j})}} \\ "
            rf"&= " + " + ".join(terms) + rf" \\ &= {latex_number(result)} \end{{aligned}}")


def weighted_sum_latex(weights: Sequence[float], column: Sequence[float], result: float,
                       i: int, max_terms: int = 3) -> str:
    """z^(i)_1 = α_i1 x^(1)_1 + α_i2 x^(2)_1 + ... written out with the actual numbers."""
    terms = [rf"{latex_number(a)} \cdot {latex_number(x, 2)}"
             for a, x in zip(weights[:max_terms], column[:max_terms])]
    if len(weights) > max_terms:
        terms.append(rf"\dots\ (\text{{{len(weights) - max_terms} more}})")
    return (rf"\begin{{aligned}} z^{{({i})}}_1 &= \textstyle\sum_j \alpha_{{{i}j}}\, x^{{(j)}}_1 \\ "
            rf"&= " + " + ".join(terms) + rf" \\ &= {latex_number(result)} \end{{aligned}}")


# Light backgrounds that stay readable with black text, alternating so neighbouring chips differ.
CHIP_COLOURS = ["#DCEBFA", "#FDE4C8", "#D9F0D3", "#F9D5D3", "#E6DCF2", "#D4EFEE", "#F7EBC0"]

SPECIAL_CHIP_COLOUR = "#FFD54F"


def chips_html(chips: Sequence[TokenChip], *, limit: int = 300, lecture: bool = False,
               max_height: int = 380, label: str = "Tokens") -> str:
    """HTML of coloured chips, the id under each token; at most `limit` chips. `label` names the
    panel for screen readers. The panel scrolls beyond `max_height` px, cut between two rows of
    chips (a fixed row pitch in a wrapping flex box: inline chips' line boxes cut a row in half)."""
    rem = 20 if lecture else 16  # px: lecture mode's root font (ui/layout.LECTURE_CSS), Streamlit's
    size_rem, id_rem = (1.15, 0.85) if lecture else (0.95, 0.7)
    size, id_size = f"{size_rem}rem", f"{id_rem}rem"
    pitch = 1.2 * (size_rem + id_rem) * rem + 2 + 4  # a chip's two lines, its padding and margins
    parts = []
    for chip in chips[:limit]:
        colour = SPECIAL_CHIP_COLOUR if chip.special else CHIP_COLOURS[chip.index % len(CHIP_COLOURS)]
        parts.append(
            f'<span class="al-chip" title="position {chip.index}, id {chip.token_id}" '
            f'style="display:inline-flex;flex-direction:column;align-items:center;'
            f'background:{colour};border-radius:5px;padding:1px 5px;margin:2px;'
            f'font-family:ui-monospace,monospace;font-size:{size};line-height:1.2;color:#111">'
            f'<span>{html.escape(chip.shown) or "∅"}</span>'
            f'<span style="font-size:{id_size};color:#444">{chip.token_id}</span></span>')
    more = ""
    if len(chips) > limit:
        more = (f'<div style="color:#555;font-size:{id_size}">… showing the first {limit:,} of '
                f'{len(chips):,} tokens</div>')
    # a scroll box keeps a long text from pushing the rest of the lesson far down the page; it is
    # a tab stop so that keyboard users can scroll it too (WCAG 2.1.1)
    rows = max(1, int(max_height // pitch))
    return (f'<div role="region" aria-label="{html.escape(label)}" tabindex="0" '
            f'style="display:flex;flex-wrap:wrap;align-content:flex-start;'
            f'max-height:{rows * pitch:.2f}px;overflow-y:auto">'
            f'{"".join(parts)}</div>{more}')


PADDING_STYLE = {"background-color": "#ECECEC", "color": "#777"}


NAME_COLUMNS = ["input", "input id", "target", "target id"]  # the rows of tokens_data.name_window_frames


def name_windows_long(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The windows of one name (tokens_data.name_window_frames: rows input / input id / target /
    target id, a column per t) as one row per position: window, t, then input beside target.
    Their columns side by side were 13 columns for a context of 12, and a 1024 px page showed 9."""
    rows = [{"window": w, "t": t, **{row: table.loc[row, column] for row in NAME_COLUMNS}}
            for w, table in enumerate(tables) for t, column in enumerate(table.columns)]
    return pd.DataFrame(rows, columns=["window", "t", *NAME_COLUMNS])


def style_padded_windows(tables: Sequence[pd.DataFrame]):
    """Several windows of one name as one table (name_windows_long), the padded positions (target
    id IGNORE_INDEX) greyed out. One table, not one per window: Streamlit formats a styled table
    cell by cell (about 9 ms a window here)."""
    frame = name_windows_long(tables)
    padded = list(frame.index[frame["target id"] == str(IGNORE_INDEX)])
    styler = frame.style
    if padded:
        styler = styler.set_properties(subset=(padded, NAME_COLUMNS), **PADDING_STYLE)
    return styler


# Streamlit's data grid (1.67) draws its text at 14 px, 17.5 px under lecture mode's 20 px root font,
# with 8 px of padding each side of a cell (its words wrap a little before that: 10 here), and wraps
# a text cell's words only in rows taller than 4rem; its wrapped lines are ~1.37 font sizes apart
# (measured: 19 px at 14 px, 24 px at 17.5 px).
GRID_FONT_PX = {False: 14.0, True: 17.5}
GRID_ROOT_PX = {False: 16, True: 20}
GRID_CELL_PADDING_PX = 10
GRID_LINE_HEIGHT = 1.37

_SPACE_EM = text_em(" ")


def wrapped_lines(text: str, width_em: float) -> int:
    """How many lines `text` takes wrapped at its spaces in a line `width_em` wide (a word longer
    than a line is broken, as the grid does)."""
    lines, line = 1, 0.0
    for word in text.split(" "):
        w = text_em(word)
        if line and line + _SPACE_EM + w <= width_em:
            line += _SPACE_EM + w
            continue
        if line:
            lines += 1
        lines += int(w // width_em) if w > width_em else 0
        line = w % width_em if w > width_em else w
    return lines


def wrapped_row_height(frame: pd.DataFrame, widths: Mapping[str, int], lecture: bool,
                       max_lines: int = 8) -> int | None:
    """The row height (px) for st.dataframe(row_height=...) that shows every cell of the columns
    `widths` names whole, their words wrapped inside a column of that many px; None when every cell
    fits one line (the grid's own row height). At most `max_lines` lines: a longer cell is cut, and
    the grid shows it whole when it is clicked."""
    font = GRID_FONT_PX[lecture]
    lines = max((wrapped_lines(str(text), (width - 2 * GRID_CELL_PADDING_PX) / font)
                 for column, width in widths.items() for text in frame[column]), default=1)
    if lines <= 1:
        return None
    height = math.ceil(min(lines, max_lines) * GRID_LINE_HEIGHT * font + 2 * GRID_CELL_PADDING_PX)
    return max(height, 4 * GRID_ROOT_PX[lecture] + 1)  # a row of 4rem or less never wraps


def sentence_inside(message: str) -> str:
    """A sentence continued after a colon ("Not entered: ", "Could not join the class: "):
    "The run trained ..." -> "the run trained ..."; a first word that is a name ("PyTorch") keeps
    its capital."""
    first = message.split(" ", 1)[0]
    if first[:1].isupper() and first[1:] == first[1:].lower():
        return message[:1].lower() + message[1:]
    return message
