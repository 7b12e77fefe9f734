"""How wide a line of text is in Streamlit's font, before a browser draws it.

Charts and tables are laid out in Python (a title broken onto lines, a column's room, a row's
height), so the project needs the width of text in Source Sans, the face Streamlit 1.67 uses for
both Vega charts and its data grid. The tables below are Source Sans's advance widths in em,
measured in Chromium with the app's own font files (canvas `measureText` at 100 px) and rounded up
to the next hundredth, so a sum of them is on the wide side by less than a hundredth of an em per
character. Weight 400 is every axis label, axis and legend title, text mark and grid cell; weight
600 is a chart's title (Streamlit's theme). Any other character (an emoji, another script) counts
as 1 em. `tests/browser/test_text_width_browser.py` checks the tables against the browser.
"""

from __future__ import annotations


def _table(groups: tuple[tuple[float, str], ...]) -> dict[str, float]:
    return {ch: em for em, chars in groups for ch in chars}


REGULAR_EM = _table((
    (0.20, " "), (0.25, "',.:;ij|·‘’íîï"), (0.26, "l"), (0.27, "I"), (0.29, "!"), (0.30, "f"),
    (0.31, "()[]{}⟨⟩"), (0.32, "-"), (0.34, "t"), (0.35, "/\\r"), (0.37, "²³⁻¹₀₁₂"), (0.42, "*s"),
    (0.43, '"?z“”'), (0.45, "xε"), (0.46, "cç"), (0.47, "vyÿ"), (0.48, "JY–"), (0.49, "Lγ"),
    (0.50, "0123456789#$+<=>F^_ek~−×÷≈≤≥λéèêë"), (0.51, "agäåáàâ"), (0.52, "VX"), (0.53, "Eθ"),
    (0.54, "STZδΣ"), (0.55, "A`hnouησñöüøóúôû"), (0.56, "bdpq√α"), (0.57, "PRβμ"), (0.58, "CK"),
    (0.59, "BπΔ"), (0.61, "&"), (0.62, "DG→←↑↓"), (0.64, "␣"), (0.65, "NU"), (0.66, "H"), (0.67, "OQ"),
    (0.68, "φ"), (0.69, "ψ"), (0.71, "ω"), (0.72, "w"), (0.73, "M"), (0.79, "W∞"), (0.80, "—"),
    (0.81, "½"), (0.83, "%m"), (0.85, "@"), (0.95, "…"),
))

SEMIBOLD_EM = _table((
    (0.20, " "), (0.26, "|"), (0.27, "ijíîï"), (0.28, "',.:;l·‘’"), (0.29, "I"), (0.32, "!f"),
    (0.33, "()-[]{}⟨⟩"), (0.35, "/\\"), (0.37, "t"), (0.38, "r²³⁻¹₀₁₂"), (0.44, "*s"), (0.45, "?z"),
    (0.46, "ε"), (0.47, "cç"), (0.48, "–"), (0.49, '"x“”'), (0.50, "J_vyÿ"), (0.51, "FLYeγéèêë"),
    (0.52, "0123456789#$+<=>^ag~−×÷≈≤≥äåáàâ"), (0.53, "kλ"), (0.54, "EVZδθ"), (0.55, "STX`oΣöøóô"),
    (0.56, "Ahnuησñüúû"), (0.57, "bdpq"), (0.58, "C√αμ"), (0.59, "Pβ"), (0.60, "BKR"), (0.62, "→←↑↓πΔ"),
    (0.63, "DG"), (0.64, "&␣"), (0.66, "NU"), (0.67, "H"), (0.68, "OQ"), (0.71, "φ"), (0.73, "ψω"),
    (0.75, "Mw"), (0.80, "W—∞"), (0.83, "½"), (0.85, "%m"), (0.88, "@"), (0.97, "…"),
))

OTHER_EM = 1.0  # a character not in the tables: an emoji is about 1 em, most letters less


def text_em(text: str, semibold: bool = False) -> float:
    """The width of one line of `text` in em of Source Sans (a title's weight when `semibold`)."""
    widths = SEMIBOLD_EM if semibold else REGULAR_EM
    return sum(widths.get(ch, OTHER_EM) for ch in str(text))
