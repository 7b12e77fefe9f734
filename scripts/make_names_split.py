"""Write data/names_split.json: scikit-learn's train/validation split of data/names.txt.

`core.data.split_names` reads the split from this file when it is asked for exactly these names
with the default size and seed, so a server does not import scikit-learn (~65 MiB) just to split
the shipped names. The file holds the positions of each split in the de-duplicated name list, in
the order scikit-learn gives them, and a key of what it was made from. Run it again after
changing names.txt (tests/core/test_data.py fails until then).

Usage: python scripts/make_names_split.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sklearn.model_selection import train_test_split  # noqa: E402

from core.data import NAMES_SPLIT_PATH, load_names, split_key  # noqa: E402
from core.runs import SPLIT_SEED, VAL_SIZE  # noqa: E402


def main() -> None:
    unique_names = list(dict.fromkeys(load_names()))
    positions = list(range(len(unique_names)))
    train_index, val_index = train_test_split(positions, test_size=VAL_SIZE, random_state=SPLIT_SEED)
    stored = {"made_by": "scripts/make_names_split.py (sklearn.model_selection.train_test_split)",
              "key": split_key(unique_names, VAL_SIZE, SPLIT_SEED),
              "train_index": [int(i) for i in train_index], "val_index": [int(i) for i in val_index]}
    NAMES_SPLIT_PATH.write_text(json.dumps(stored, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{NAMES_SPLIT_PATH}: {len(train_index):,} train and {len(val_index):,} validation names")


if __name__ == "__main__":
    main()
