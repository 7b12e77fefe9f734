"""The embeddings table every walkthrough page computes on: limits, validation, CSV, edits.

One function judges a table typed in the editor (`validate_embedding_table`) and one judges pasted
CSV (`parse_embeddings_csv`); both name every unusable cell. Also: random embeddings from a seed,
adding or removing a dimension, and the same cell checks for a hand-edited weight matrix.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import torch

MAX_TOKENS = 64          # a 64 x 64 attention map is still readable as colours

MAX_DIMS = 64            # embedding dimensions d_in, and the largest d_out

MAX_ABS = 1e100          # larger values overflow float64 once multiplied (1e100^2 * 64 > 1e308)

MAX_TOKEN_CHARS = 40     # longer names would swamp the chart axes

MAX_CSV_CHARS = 200_000  # a 64 x 64 table of long numbers is about 100k characters

LARGE_VALUE = 1e6        # above this, softmax of the scores is one-hot; worth telling the student

MAX_SEED = 2**31 - 1

SHOWN_PROBLEMS = 5       # how many bad cells one message lists


class EmbeddingError(ValueError):
    """An embeddings table that cannot be used; the message says which cell and why."""


@dataclass
class EmbeddingTable:
    """A validated table: unique-or-warned token names and a (T, d_in) list of finite floats."""

    tokens: list[str]
    embeddings: list[list[float]]
    warnings: list[str]

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.embeddings), len(self.embeddings[0])


def dim_names(d_in: int) -> list[str]:
    """Column names of the embedding dimensions: d1, d2, ..."""
    return [f"d{j + 1}" for j in range(d_in)]


def embedding_frame(tokens: Sequence[str], embeddings: Sequence[Sequence[float]]) -> pd.DataFrame:
    """The editor's table: a token column, then one column per dimension."""
    widths = {len(row) for row in embeddings}
    if len(widths) > 1:
        raise EmbeddingError("the rows have different lengths")
    d_in = widths.pop() if widths else 0
    frame = pd.DataFrame(np.asarray(embeddings, dtype=np.float64).reshape(len(embeddings), d_in),
                         columns=dim_names(d_in))
    names = [str(t) for t in tokens][:len(embeddings)]
    frame.insert(0, "token", names + [""] * (len(embeddings) - len(names)))
    return frame


def cell_text(value: float) -> str:
    """A number as the editor's text cell shows it: the shortest text that reads back exactly."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def editor_frame(tokens: Sequence[str], embeddings: Sequence[Sequence[float]]) -> pd.DataFrame:
    """The editor's table with every number as text: the editor's cells are text cells, so that
    what the student types (1e30, NaN, 1,5) reaches the validation as typed. A number cell would
    silently drop the characters it does not take ("1e30" became 130)."""
    frame = embedding_frame(tokens, embeddings)
    for name in frame.columns[1:]:
        frame[name] = [cell_text(v) for v in frame[name]]
    return frame


def _parse_cell(raw) -> tuple[float | None, str | None]:
    """A number from one table cell, or the reason it is not usable."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return None, "the cell is empty"
    if isinstance(raw, (bool, np.bool_)):
        return None, "true/false is not a number"
    if isinstance(raw, (int, float, np.integer, np.floating)):
        value = float(raw)
    elif isinstance(raw, str):
        text = raw.strip().replace("−", "-")  # a minus sign pasted from a document
        if not text:
            return None, "the cell is empty"
        try:
            value = float(text)
        except ValueError:
            return None, f"“{text[:20]}” is not a number"
        if math.isnan(value):
            return None, f"“{text[:20]}” is not a number (NaN cannot be used)"
    else:
        return None, f"a {type(raw).__name__} is not a number"
    if math.isnan(value):
        return None, "the cell is empty"
    if math.isinf(value):
        return None, f"{'−' if value < 0 else ''}∞ cannot be used; attention needs finite numbers"
    if abs(value) > MAX_ABS:
        return None, f"{value:.3g} is too large; use values between −1e100 and 1e100"
    return value, None


def _token_name(raw) -> str:
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return ""
    return str(raw).strip()


def _raise_problems(problems: list[str]) -> None:
    if problems:
        more = f" (and {len(problems) - SHOWN_PROBLEMS} more)" if len(problems) > SHOWN_PROBLEMS else ""
        raise EmbeddingError("; ".join(problems[:SHOWN_PROBLEMS]) + more + ".")


def _numeric_block(block: pd.DataFrame, row_label, col_names) -> tuple[np.ndarray, list[str]]:
    """The values as a float array, and a message for every unusable cell."""
    if all(pd.api.types.is_float_dtype(t) or pd.api.types.is_integer_dtype(t) for t in block.dtypes):
        values = block.to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values) | (np.abs(np.nan_to_num(values)) > MAX_ABS)
        if not bad.any():  # the common case (the data editor's float columns): no Python loop
            return values, []
        cells = [(i, j) for i, j in zip(*np.nonzero(bad))]
    else:
        values = np.zeros(block.shape, dtype=np.float64)
        cells = [(i, j) for i in range(block.shape[0]) for j in range(block.shape[1])]
    raw = block.to_numpy(dtype=object)
    problems = []
    for i, j in cells:
        value, problem = _parse_cell(raw[i, j])
        if problem:
            problems.append(f"{row_label(i)}, column {col_names[j]}: {problem}")
        else:
            values[i, j] = value
    return values, problems


def validate_embedding_table(table: pd.DataFrame, *, row_word: str = "row",
                             row_numbers: Sequence[int] | None = None) -> EmbeddingTable:
    """Check an embeddings table (a 'token' column, then one column per dimension).

    Raises EmbeddingError naming every unusable cell (text, empty, NaN, ±inf, beyond ±1e100),
    or a bad shape (no tokens, more than 64, no dimension, more than 64). Repeated token names
    and very large values are allowed, with a warning.
    """
    if not isinstance(table, pd.DataFrame):
        raise EmbeddingError("expected a table of tokens and numbers")
    if "token" not in table.columns:
        raise EmbeddingError("the table needs a “token” column with the token names")
    dim_cols = [c for c in table.columns if c != "token"]
    num_tokens = len(table)
    if num_tokens == 0:
        raise EmbeddingError("there are no tokens: add at least one row")
    if num_tokens > MAX_TOKENS:
        raise EmbeddingError(f"{num_tokens} tokens is too many: use at most {MAX_TOKENS}")
    if not dim_cols:
        raise EmbeddingError("each token needs at least one dimension (one number)")
    if len(dim_cols) > MAX_DIMS:
        raise EmbeddingError(f"{len(dim_cols)} dimensions is too many: use at most {MAX_DIMS}")

    numbers = list(row_numbers) if row_numbers is not None else list(range(1, num_tokens + 1))
    tokens = [_token_name(t) for t in table["token"].tolist()]

    def row_label(i: int) -> str:
        name = f" (“{tokens[i][:20]}”)" if tokens[i] else ""
        return f"{row_word.capitalize()} {numbers[i]}{name}"

    problems = [f"{row_label(i)} has no token name" for i, t in enumerate(tokens) if not t]
    problems += [f"{row_label(i)}: the token name is longer than {MAX_TOKEN_CHARS} characters"
                 for i, t in enumerate(tokens) if len(t) > MAX_TOKEN_CHARS]
    values, cell_problems = _numeric_block(table[dim_cols], row_label, [str(c) for c in dim_cols])
    _raise_problems(problems + cell_problems)
    return EmbeddingTable(tokens, values.tolist(), _table_warnings(tokens, values))


CHECKED_TABLES = 32  # tables whose verdict check_embeddings keeps (a class shares a handful)


def table_key(tokens: Sequence[str], embeddings: Sequence[Sequence[float]]) -> tuple:
    """A table's content as one hashable, comparable value (tokens, then rows of numbers)."""
    return tuple(tokens), tuple(tuple(row) for row in embeddings)


def check_embeddings(tokens: Sequence[str], embeddings: Sequence[Sequence[float]]) -> EmbeddingTable:
    """validate_embedding_table(embedding_frame(tokens, embeddings)), worked out once per content.

    Every walkthrough rerun checks the shared embeddings again (the editor may be closed, a link
    may have brought them): building and judging the table cost 5% of a class's server time, for
    the same few tables each time. The verdict is kept per content (at most CHECKED_TABLES); each
    caller gets its own copy of the lists."""
    try:
        verdict = _checked(table_key(tokens, embeddings))
    except TypeError:  # not a table of hashable cells: judge it without keeping the verdict
        return validate_embedding_table(embedding_frame(tokens, embeddings))
    if isinstance(verdict, str):
        raise EmbeddingError(verdict)
    return EmbeddingTable(list(verdict.tokens), [list(row) for row in verdict.embeddings],
                          list(verdict.warnings))


@functools.lru_cache(maxsize=CHECKED_TABLES)
def _checked(key: tuple) -> EmbeddingTable | str:
    tokens, embeddings = key
    try:
        return validate_embedding_table(embedding_frame(tokens, embeddings))
    except EmbeddingError as exc:
        return str(exc)


def _table_warnings(tokens: list[str], values: np.ndarray) -> list[str]:
    warnings = []
    seen: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        seen.setdefault(t, []).append(i + 1)
    repeats = {t: rows for t, rows in seen.items() if len(rows) > 1}
    if repeats:
        listed = ", ".join(f"“{t}” (rows {', '.join(map(str, rows))})"
                           for t, rows in list(repeats.items())[:4])
        warnings.append(f"Repeated token names: {listed}. The charts add the position "
                        "(“one #4”) to tell them apart; rename them to make the charts clearer.")
    largest = float(np.abs(values).max())
    if largest > LARGE_VALUE:
        warnings.append(f"Very large values (up to {largest:.3g}): the dot products are huge, so "
                        "softmax puts (almost) all the weight on the largest score, a one-hot "
                        "row (Simple attention's step 2 sets plain normalisation beside it, which "
                        "still spreads the weight).")  # the table is shared: no "this page" here
    return warnings


def _number(text: str) -> float | None:
    """A CSV cell as the number it was meant as (inf and nan included), or None for text."""
    try:
        return float(str(text).strip().replace("−", "-"))
    except ValueError:
        return None


def _looks_numeric(text: str) -> bool:
    """Whether a CSV cell was meant as a number (inf and nan included, so they get reported)."""
    return _number(text) is not None


_DECIMAL_COMMA = re.compile(r"[+\-−]?\d*,\d+([eE][+\-]?\d+)?")  # 0,55 where a point is meant
HEADER_WORDS = ("token", "tokens", "name", "word", "words")  # a first column titled as the names


def _sniff_delimiter(line: str) -> str:
    """The separator of one line: a tab (pasted from a spreadsheet), a semicolon (a spreadsheet
    set to a language that writes 0,55 for 0.55, so its commas are decimal commas), or a comma."""
    if "\t" in line:
        return "\t"
    unquoted = re.sub(r'"[^"]*"', "", line)  # a comma inside a quoted name separates nothing
    if ";" in unquoted and all(_DECIMAL_COMMA.fullmatch(cell.strip())
                               for cell in unquoted.split(";") if "," in cell):
        return ";"  # every comma left is inside a number like 0,55
    return ","


def _split_line(line: str) -> list[str]:
    """One CSV line's cells, stripped; in a semicolon or tab line 0,55 is read as 0.55 (copied
    from a spreadsheet in a language that writes decimal commas)."""
    delimiter = _sniff_delimiter(line)
    cells = [cell.strip() for cell in next(csv.reader([line], delimiter=delimiter))]
    if delimiter != ",":
        cells = [c.replace(",", ".") if _DECIMAL_COMMA.fullmatch(c) else c for c in cells]
    return cells


def _is_header(first: list[str], names_titled: bool) -> bool:
    """Whether the first line names the columns: `token,d1,d2` (no numbers after the first cell),
    or `token,1,2` / `name,0,1` (a names title, then the dimensions numbered in order)."""
    if len(first) < 2:
        return False
    if not any(_looks_numeric(c) for c in first[1:]):
        return True
    if not names_titled:
        return False
    try:
        numbers = [int(c) for c in first[1:]]
    except ValueError:
        return False
    return numbers in (list(range(len(numbers))), list(range(1, len(numbers) + 1)))


def parse_embeddings_csv(text: str) -> EmbeddingTable:
    """Embeddings from pasted CSV: one line per token, `name, v1, v2, ...`.

    Commas, semicolons or tabs separate values (each line is looked at on its own; with
    semicolons or tabs, 0,55 means 0.55); blank lines are skipped; a first line like `token,d1,d2` or
    `token,1,2` is a header. Lines of numbers only get token names t1, t2, ... (unless the header
    or the first column says they are names, like tokens called `nan`). Every line must have the
    same number of values. Errors name the line.
    """
    if not isinstance(text, str) or not text.strip():
        raise EmbeddingError("the CSV box is empty: paste lines like “journey, 0.55, 0.87, 0.66”")
    if len(text) > MAX_CSV_CHARS:
        raise EmbeddingError(f"the CSV text is too long ({len(text):,} characters; "
                             f"the limit is {MAX_CSV_CHARS:,})")
    text = text.removeprefix("\ufeff")  # the byte-order mark a spreadsheet's "CSV UTF-8" starts with
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    try:
        parsed = [(n, _split_line(line)) for n, line in lines]
    except csv.Error as exc:
        raise EmbeddingError(f"the CSV could not be read: {exc}") from exc
    first = parsed[0][1]
    names_titled = first[0].lower() in HEADER_WORDS
    if len(parsed) > 1 and _is_header(first, names_titled):
        parsed = parsed[1:]  # a header line such as "token,d1,d2,d3"
    else:
        names_titled = False  # "token" is the name of a token here, not a column title
    first_line, expected = parsed[0][0], len(parsed[0][1])
    ragged = [f"line {n} has {len(cells)}" for n, cells in parsed if len(cells) != expected]
    if ragged:
        raise EmbeddingError(
            f"the lines have different numbers of values: line {first_line} has {expected}, but "
            + ", ".join(ragged[:4]) + ". Every line needs a token name, then one value per dimension")
    numbers_only = (not names_titled
                    and all(_looks_numeric(c) for _, cells in parsed for c in cells)
                    # a first column of only nan / inf words is names, not values
                    and any(math.isfinite(_number(cells[0])) for _, cells in parsed))
    if numbers_only:
        tokens = [f"t{i + 1}" for i in range(len(parsed))]
        rows = [cells for _, cells in parsed]
    else:
        tokens = [cells[0] for _, cells in parsed]
        rows = [cells[1:] for _, cells in parsed]
    d_in = len(rows[0]) if rows else 0
    frame = pd.DataFrame(rows, columns=dim_names(d_in), dtype=object)
    frame.insert(0, "token", tokens)
    return validate_embedding_table(frame, row_word="line", row_numbers=[n for n, _ in parsed])


def embeddings_to_csv(tokens: Sequence[str], embeddings: Sequence[Sequence[float]]) -> str:
    """The table as CSV with a header, the format parse_embeddings_csv reads back."""
    frame = embedding_frame(tokens, embeddings)
    return frame.to_csv(index=False)


def random_embeddings(num_tokens: int, d_in: int, seed: int) -> list[list[float]]:
    """Uniform [0, 1) values rounded to 2 decimals, like the book's example (reproducible by seed)."""
    if not 1 <= num_tokens <= MAX_TOKENS or not 1 <= d_in <= MAX_DIMS:
        raise EmbeddingError(f"random embeddings need 1–{MAX_TOKENS} tokens and 1–{MAX_DIMS} dimensions")
    generator = torch.Generator().manual_seed(int(seed))
    values = torch.rand(num_tokens, d_in, generator=generator, dtype=torch.float64)  # (T, d_in)
    return [[round(v, 2) for v in row] for row in values.tolist()]


def resized_tokens(tokens: Sequence[str], num_tokens: int) -> list[str]:
    """Keep the first names; new rows get tok7, tok8, ..."""
    names = list(tokens)[:num_tokens]
    return names + [f"tok{i + 1}" for i in range(len(names), num_tokens)]


def add_dimension(embeddings: list[list[float]]) -> list[list[float]]:
    """A new last dimension, 0.0 for every token (so the scores do not change until edited)."""
    if len(embeddings[0]) >= MAX_DIMS:
        raise EmbeddingError(f"there are already {MAX_DIMS} dimensions, the most this page allows")
    return [list(row) + [0.0] for row in embeddings]


def remove_dimension(embeddings: list[list[float]]) -> list[list[float]]:
    """Drop the last dimension; one dimension must remain."""
    if len(embeddings[0]) <= 1:
        raise EmbeddingError("each token needs at least one dimension, so the last one stays")
    return [list(row[:-1]) for row in embeddings]


def validate_weight_table(table: pd.DataFrame, name: str, shape: tuple[int, int],
                          current: Sequence[Sequence[float]] | None = None) -> list[list[float]]:
    """Check a hand-edited weight matrix (every cell a finite number within ±1e100). A cell still
    showing `current`'s entry as weight_text wrote it keeps that entry exactly (its text may be
    the shorter float32 one)."""
    if not isinstance(table, pd.DataFrame) or tuple(table.shape) != tuple(shape):
        got = tuple(table.shape) if isinstance(table, pd.DataFrame) else None
        raise EmbeddingError(f"{name} must have shape {tuple(shape)}, got {got}")
    labels = [str(i) for i in table.index]
    values, problems = _numeric_block(table, lambda i: f"{name} row {labels[i]}",
                                      [str(c) for c in table.columns])
    _raise_problems(problems)
    values = values.tolist()
    if current is not None and np.shape(current) == tuple(shape):
        for i, row in enumerate(current):
            for j, value in enumerate(row):
                if str(table.iat[i, j]).strip() == weight_text(value):
                    values[i][j] = float(value)
    return values


_FLOAT32_MAX = float(np.finfo(np.float32).max)  # a Python float: compared as float64


def weight_text(value: float) -> str:
    """A weight as its editor cell shows it. A float32 weight (the book's seeded ones are) in the
    shortest text that reads back as that float32: "0.29611194", not the 17 digits of its exact
    float64 copy, "0.29611194133758545". Any other number in full (cell_text)."""
    single = np.float32(value) if abs(value) <= _FLOAT32_MAX else None  # a larger one overflows
    if single is not None and float(single) == float(value):
        text = str(single)
        return text[:-2] if text.endswith(".0") else text
    return cell_text(value)


def weight_frame(W: torch.Tensor) -> pd.DataFrame:
    """A weight matrix for the editor: rows are input dimensions, columns output dimensions, each
    entry as text (weight_text): the cells are text cells, as in editor_frame (a number cell turned
    a typed "1e300" into 1300 without a word)."""
    d_in, d_out = W.shape
    return pd.DataFrame([[weight_text(v) for v in row] for row in W.tolist()],
                        index=[f"in {i + 1}" for i in range(d_in)],
                        columns=[f"out {j + 1}" for j in range(d_out)])
