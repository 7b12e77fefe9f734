"""The chart layer: the only package in the project that imports Altair.

Every builder is a pure function from numbers to an Altair chart. The one fast path: builders are
wrapped in `fast_build` (no schema validation of each object while building), build channels from
field/type keywords (alt.X(field="col", type="nominal"), not "col:N"; conditions as dicts, not
alt.condition: both go through the JSON schema even then), pass title/size to the constructor and
put the one DataFrame on the top-level chart (each Altair copy of a layered chart deep-copies its
layers). Pages show charts with `ui.charts.show_chart`, which sends `vega_spec(chart, lecture)`:
one serialisation without validation, themed on the dict (the tests validate every builder's
output with to_dict(validate=True)); it offers PNG/SVG downloads made by `figure_bytes`.
Pass `lecture=True` in lecture mode.

Heatmaps (heatmap.py)
    heatmap(matrix, row_labels, col_labels, *, title, x_title, y_title, fmt=".2f", lecture,
            scheme=None, diverging=False, domain=None, cell=None, cell_w=None, cell_h=None,
            show_values=True, max_width=640, special=None, masked=None, highlight_row=None,
            highlight_col=None, highlight_cells=None, facets=None, facet_columns=None,
            row_axis=True, x_on_top=False, legend=None, fill_width=None)
        matrix: 2-D (rows, cols); 3-D (panels, rows, cols) with facets=[panel names]; 4-D
        (grid rows, grid cols, rows, cols) with facets=([layer names], [head names]).
        Values are written in cells when they fit (else hidden, and a colour legend shown);
        −∞/NaN cells are grey and say so; `special` (strings, matrix shape) relabels and greys
        cells ("✕", "0/0"); `masked` (booleans) greys cells; highlight_* outline cells;
        fill_width (px) grows the cells to use the width available (lecture mode on a projector).
        The chart's data (`chart.data`) is the long-form frame of `matrix_frame` (+ facet columns).
    matrix_frame(matrix, row_labels, col_labels, fmt) -> DataFrame(row, col, row_i, col_i,
        value, label, finite).

Lines (lines.py) — long-form DataFrames, one row per point:
    line_chart(df, *, x, y, series, title, x_title, y_title, lecture, dash=None, points=False,
               width=620, height=320, log_y=False, rule=(y, text) or None, y_format=".4f")

Bars and points (bars.py):
    bar_chart(values, labels, *, title, x_title, y_title, fmt=".4f", lecture, highlight=None,
              domain=None, width=None, height=220)
    grouped_bars({series name: values}, labels, *, ... same options, max_labels=16)
    hbar_chart(values, labels, *, texts=None, title, x_title, lecture, domain, x_format, width)
    scatter(df, *, x, y, label, group=None, title, lecture, x_title, y_title, width, height)

Theme (theme.py): palette(lecture), font_sizes(lecture), themed(chart, lecture) (a copy with the
    mode's fonts and "pad"), vega_spec(chart, lecture) (the themed spec as a dict, unvalidated, its
    table as a DataFrame under "datasets": what ui.charts.show_chart sends), padded(chart),
    fast_build (decorator for builders written elsewhere in core/viz), unique_labels(labels),
    format_value(v, fmt), sequential_scheme/diverging_scheme(lecture), OKABE_ITO, NEG_INF_LABEL,
    contrast_ratio(a, b) (WCAG's), text_on(fill) (black or white on a cell of that colour),
    LECTURE_MIN_AXIS_PX / LECTURE_MIN_VALUE_PX (the px floor lecture mode holds to).

Fit (fit.py): natural_width(spec) (a single or layered chart's whole width, estimated),
    fit_to_column(spec) (a copy laid out again to fit a column narrower than that, text at full
    size, where its labels still have room), drawn_width(spec) (st.vega_lite_chart's width for it).

Export (export.py): with_caption(chart, title, caption), to_png(chart, scale), to_svg(chart),
    figure_bytes(chart, *, title, caption, lecture, fmt="png"|"svg") -> bytes (themed, captioned),
    file_name(title, ext) -> a safe file name that keeps the human title;
    chart_title(chart) -> the title text a chart carries ("" if none);
    description(title, caption) -> the chart's text alternative (set as Vega-Lite `description`);
    chart_table(chart) / table_csv(chart) -> the numbers it draws, as a table / as CSV bytes.

Chart code that needs Altair itself belongs in a module of this package (a new one per topic is
fine): tests/core/test_viz.py fails when any module outside core/viz imports altair.
"""

from core.viz.bars import bar_chart, grouped_bars, hbar_chart, scatter
from core.viz.export import (chart_table, chart_title, description, figure_bytes, file_name, table_csv,
                             to_png, to_svg, with_caption)
from core.viz.fit import drawn_width, fit_to_column, natural_width
from core.viz.heatmap import heatmap, matrix_frame
from core.viz.lines import line_chart
from core.viz.theme import (DEFAULT_PALETTE, HIGHLIGHT, LECTURE_MIN_AXIS_PX, LECTURE_MIN_VALUE_PX,
                            MASKED_GREY, NEG_INF_LABEL, OKABE_ITO, PAD, RIGHT_ANSWER, _fmt, _font_sizes, contrast_ratio,
                            diverging_scheme, fast_build, font_sizes, format_value, layered, padded, palette,
                            sequential_scheme, text_on, theme_config, themed, unique_labels, vega_spec)

__all__ = [
    "heatmap", "matrix_frame", "line_chart", "bar_chart", "grouped_bars", "hbar_chart", "scatter",
    "with_caption", "chart_title", "description", "chart_table", "table_csv", "to_png", "to_svg", "figure_bytes", "file_name",
    "themed", "vega_spec", "theme_config", "padded", "fast_build", "palette", "font_sizes", "unique_labels", "format_value",
    "sequential_scheme", "diverging_scheme", "OKABE_ITO", "DEFAULT_PALETTE", "NEG_INF_LABEL", "contrast_ratio", "text_on",
    "HIGHLIGHT", "RIGHT_ANSWER", "MASKED_GREY", "PAD", "LECTURE_MIN_AXIS_PX", "LECTURE_MIN_VALUE_PX",
    "fit_to_column", "drawn_width", "natural_width",
]
