"""Tests of core/data.py and scripts/build_names.py: names windows, splits, sliding windows."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

import pytest
import torch

from core.data import (
    IGNORE_INDEX,
    NAMES_PATH,
    REPO_ROOT,
    GPTDatasetV1,
    NamesData,
    build_names_data,
    count_windows,
    create_dataloader_v1,
    encode_corpus,
    get_batch,
    load_names,
    name_windows,
    name_windows_loop,
    random_batch,
    sliding_windows,
    split_names,
    train_val_split_tensor,
)
from core.tokenizers import CharTokenizer, clear_gpt2_cache, gpt2_encoding

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits (tests/conftest.py)

# Our own text for the data-loader tests: about 180 GPT-2 tokens.
STORY = (
    "The lighthouse keeper counted the ships every evening. Some nights there were seven, some "
    "nights only two, and once, in a storm that lasted three days, there were none at all. "
    "He wrote each number in a blue notebook, and when the notebook was full he started another. "
    "Years later his granddaughter found forty notebooks in the attic and read them like a novel, "
    "trying to guess which ships came back and which ones sailed on to places with other lights."
) * 2


@pytest.fixture(scope="module")
def gpt2_offline(tmp_path_factory):
    """GPT-2 from local files only: no network, empty tiktoken cache in a tmp dir."""
    def refuse(*args, **kwargs):
        raise OSError("network blocked in tests")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket, "create_connection", refuse)
        patch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("tiktoken-cache")))
        clear_gpt2_cache()
        yield
    clear_gpt2_cache()


@pytest.fixture(scope="module")
def all_names() -> list[str]:
    return load_names()


@pytest.fixture(scope="module")
def names_tokenizer(all_names) -> CharTokenizer:
    return CharTokenizer.from_text("".join(all_names))


# --- names.txt and its build script ----------------------------------------------------------


def test_build_script_reproduces_committed_names(tmp_path):
    out = tmp_path / "names.txt"
    subprocess.run(
        [sys.executable, "scripts/build_names.py", "--out", str(out)],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    assert out.read_bytes() == NAMES_PATH.read_bytes()


def test_names_file_format():
    raw = NAMES_PATH.read_bytes()
    assert raw.endswith(b"\n") and b"\r" not in raw
    lines = raw.decode("ascii").split("\n")[:-1]
    assert len(lines) == 32_033
    assert all(re.fullmatch(r"[a-z]+", line) for line in lines)
    assert len(set(lines)) == len(lines)
    assert 200_000 < len(raw) < 260_000
    assert lines[:3] == ["james", "john", "robert"]


def test_load_names_skips_blank_lines(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("emma\n\n olivia \nava\n", encoding="utf-8")
    assert load_names(path) == ["emma", "olivia", "ava"]


# --- name windows ------------------------------------------------------------------------------


@pytest.mark.parametrize("context_size", [1, 3, 12])
def test_every_name_yields_windows(all_names, names_tokenizer, context_size):
    inputs, targets = name_windows(all_names, names_tokenizer, context_size)
    assert inputs.shape == targets.shape
    assert inputs.shape[1] == context_size
    assert inputs.dtype == targets.dtype == torch.long
    expected = sum(max(1, len(name) + 2 - context_size) for name in all_names)
    assert len(inputs) == expected
    # Only a name's first window starts with "."; there is exactly one per name, in order.
    first_rows = torch.nonzero(inputs[:, 0] == 0).squeeze(1)
    assert len(first_rows) == len(all_names)
    for row, name in zip(first_rows.tolist()[:2000], all_names[:2000]):
        real = targets[row][targets[row] != IGNORE_INDEX]
        assert names_tokenizer.decode(real) == (name + ".")[:context_size]


@pytest.mark.parametrize("context_size", [1, 3, 12, 16])
def test_the_loop_the_lessons_show_cuts_the_trainers_windows(all_names, names_tokenizer, context_size):
    """The pages show name_windows_loop (one name at a time); the trainer uses name_windows."""
    fast_x, fast_y = name_windows(all_names, names_tokenizer, context_size)
    loop_x, loop_y = name_windows_loop(all_names, names_tokenizer, context_size)
    assert torch.equal(fast_x, loop_x) and torch.equal(fast_y, loop_y)


def test_the_loop_refuses_what_name_windows_refuses(names_tokenizer):
    assert name_windows_loop([], names_tokenizer, 4)[0].shape == (0, 4)
    with pytest.raises(ValueError, match="context_size"):
        name_windows_loop(["ab"], names_tokenizer, 0)
    with pytest.raises(ValueError, match="must not contain"):
        name_windows_loop(["a.b"], names_tokenizer, 4)


def test_short_name_is_padded():
    tokenizer = CharTokenizer.from_text("abcdefghij")
    inputs, targets = name_windows(["abc"], tokenizer, context_size=6)
    assert inputs.tolist() == [[0, 1, 2, 3, 0, 0]]
    assert targets.tolist() == [[1, 2, 3, 0, IGNORE_INDEX, IGNORE_INDEX]]


def test_exact_fit_has_no_padding():
    tokenizer = CharTokenizer.from_text("abcdefghij")
    inputs, targets = name_windows(["abc"], tokenizer, context_size=4)
    assert inputs.tolist() == [[0, 1, 2, 3]]
    assert targets.tolist() == [[1, 2, 3, 0]]


def test_long_name_slides_with_stride_one():
    tokenizer = CharTokenizer.from_text("abcdefghij")
    inputs, targets = name_windows(["abcdefgh"], tokenizer, context_size=4)
    assert len(inputs) == 8 + 2 - 4
    assert tokenizer.decode(inputs[0]) == ".abc"
    assert tokenizer.decode(inputs[-1]) == "efgh"
    assert tokenizer.decode(targets[-1]) == "fgh."


@pytest.mark.parametrize("context_size", [1, 2, 5, 12])
def test_every_target_is_predicted(context_size):
    names = ["a", "bo", "eve", "alexandra", "maximiliano", "christopher"]
    tokenizer = CharTokenizer.from_text("".join(names))
    for name in names:
        inputs, targets = name_windows([name], tokenizer, context_size)
        # With stride 1, window 0 plus the last target of each later window is the whole target.
        covered = targets[0].tolist() + targets[1:, -1].tolist()
        covered = [idx for idx in covered if idx != IGNORE_INDEX]
        assert covered == tokenizer.encode(name + ".")
        # ... and the same holds for the inputs, against "." + name.
        seen = inputs[0].tolist() + inputs[1:, -1].tolist()
        assert seen[: len(name) + 1] == tokenizer.encode("." + name)


def test_targets_are_inputs_shifted(all_names, names_tokenizer):
    inputs, targets = name_windows(all_names, names_tokenizer, 12)
    real = targets[:, :-1] != IGNORE_INDEX
    assert torch.equal(inputs[:, 1:][real], targets[:, :-1][real])


def test_padding_only_at_the_end(all_names, names_tokenizer):
    inputs, targets = name_windows(all_names, names_tokenizer, 12)
    padding = targets == IGNORE_INDEX
    assert padding.any()
    assert not padding[:, 0].any()  # every window predicts something
    # Once padding starts it never stops: the mask never goes from True back to False.
    assert not (padding[:, :-1] & ~padding[:, 1:]).any()
    assert (inputs[padding] == 0).all()
    assert set(torch.unique(targets).tolist()) <= {IGNORE_INDEX, *range(27)}
    assert (targets[~padding] >= 0).all()


def test_name_windows_errors():
    tokenizer = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match="context_size"):
        name_windows(["abc"], tokenizer, 0)
    with pytest.raises(ValueError, match=r'"\."'):
        name_windows(["a.b"], tokenizer, 4)
    with pytest.raises(ValueError, match="empty"):
        name_windows(["ab", ""], tokenizer, 4)
    with pytest.raises(ValueError, match="'z'"):
        name_windows(["abz"], tokenizer, 4)


def test_name_windows_of_no_names():
    inputs, targets = name_windows([], CharTokenizer.from_text("abc"), 5)
    assert inputs.shape == targets.shape == (0, 5)


# --- split and NamesData -----------------------------------------------------------------------


def test_split_is_disjoint_and_about_ten_percent(all_names):
    train, val = split_names(all_names, val_size=0.1, seed=101)
    assert not set(train) & set(val)
    assert set(train) | set(val) == set(all_names)
    assert len(train) + len(val) == len(set(all_names))
    assert abs(len(val) / len(set(all_names)) - 0.1) < 0.002


def test_split_deduplicates_and_is_seeded():
    names = ["ann", "bob", "ann", "cid", "dee", "eve", "bob", "fay", "gus", "hal", "ivy", "jo"]
    train, val = split_names(names, val_size=0.25, seed=7)
    assert not set(train) & set(val)
    assert sorted(train + val) == sorted(set(names))
    assert split_names(names, val_size=0.25, seed=7) == (train, val)


def test_split_errors():
    with pytest.raises(ValueError, match="val_size"):
        split_names(["a", "b"], val_size=1.5)
    with pytest.raises(ValueError, match="two distinct"):
        split_names(["a", "a"], val_size=0.5)


def test_build_names_data_defaults():
    data = build_names_data()
    assert isinstance(data, NamesData)
    assert data.tokenizer.vocab_size == 27
    assert data.context_size == 12
    assert data.train_x.shape[1] == data.val_x.shape[1] == 12
    assert data.train_x.shape == data.train_y.shape
    assert data.val_x.shape == data.val_y.shape
    assert len(data.train_x) > len(data.train_names)  # long names give several windows


def test_n_train_tokens_counts_real_targets():
    names = ["ann", "bob", "cid", "dee", "eve", "fay", "gus", "hal", "ivy", "joanna"]
    data = build_names_data(context_size=20, val_size=0.2, seed=3, names=names)
    # Every name fits one window here, so the real targets are the name plus its end ".".
    assert data.n_train_tokens == sum(len(name) + 1 for name in data.train_names)
    assert data.tokenizer == CharTokenizer.from_text("".join(names))


def test_random_batch_is_reproducible_and_paired():
    x = torch.arange(100).reshape(50, 2)  # (50, 2)
    y = x + 1000  # (50, 2)
    xb, yb = random_batch(x, y, 8, torch.Generator().manual_seed(0))
    xb_again, _ = random_batch(x, y, 8, torch.Generator().manual_seed(0))
    assert xb.shape == (8, 2)
    assert torch.equal(xb, xb_again)
    assert torch.equal(yb, xb + 1000)
    with pytest.raises(ValueError, match="batch_size"):
        random_batch(x, y, 0, torch.Generator())


# --- sliding windows (book ch. 2) --------------------------------------------------------------


def _book_windows(ids: list[int], max_length: int, stride: int):
    """The book's loop, item by item, as the reference."""
    inputs, targets = [], []
    for i in range(0, len(ids) - max_length, stride):
        inputs.append(ids[i : i + max_length])
        targets.append(ids[i + 1 : i + max_length + 1])
    return inputs, targets


def test_count_windows_matches_loop_and_tensor():
    for n_tokens in range(0, 30):
        for max_length in range(1, 9):
            for stride in range(1, 10):
                expected = len(range(0, n_tokens - max_length, stride))
                assert count_windows(n_tokens, max_length, stride) == expected
                if expected == 0:
                    continue
                inputs, targets = sliding_windows(list(range(n_tokens)), max_length, stride)
                assert len(inputs) == len(targets) == expected


@pytest.mark.parametrize("max_length, stride", [(4, 1), (4, 4), (4, 5), (7, 3), (1, 1)])
def test_sliding_windows_match_the_book(max_length, stride):
    ids = [(7 * i + 3) % 50 for i in range(41)]
    inputs, targets = sliding_windows(ids, max_length, stride)
    book_inputs, book_targets = _book_windows(ids, max_length, stride)
    assert inputs.tolist() == book_inputs
    assert targets.tolist() == book_targets
    assert torch.equal(inputs[:, 1:], targets[:, :-1])


@pytest.mark.parametrize("max_length, stride", [(4, 1), (4, 4), (4, 5), (7, 3), (1, 1), (40, 2)])
def test_the_books_dataset_loop_and_sliding_windows_cut_the_same_windows(gpt2_offline, max_length, stride):
    """Two ways to the same windows: GPTDatasetV1's loop and one unfold. The Tokens page's badge
    compares its batches with the book's loader, so this is what the badge can catch."""
    gpt2 = gpt2_encoding()
    dataset = GPTDatasetV1(STORY, gpt2, max_length, stride)
    ids = gpt2.encode(STORY)
    inputs, targets = sliding_windows(ids, max_length, stride)
    assert torch.equal(torch.stack(dataset.input_ids), inputs)
    assert torch.equal(torch.stack(dataset.target_ids), targets)
    with pytest.raises(ValueError, match="at least"):
        GPTDatasetV1("Too short.", gpt2, 256, 128)
    with pytest.raises(ValueError, match="stride"):
        GPTDatasetV1(STORY, gpt2, 4, 0)


def test_sliding_windows_errors():
    with pytest.raises(ValueError, match="stride"):
        sliding_windows(list(range(20)), 4, 0)
    with pytest.raises(ValueError, match="stride"):
        count_windows(20, 4, -1)
    with pytest.raises(ValueError, match="max_length"):
        sliding_windows(list(range(20)), 0, 1)
    with pytest.raises(ValueError, match=r"has 4 tokens.*at least 5"):
        sliding_windows([1, 2, 3, 4], 4, 1)


def test_gpt_dataset_and_loader_shapes(gpt2_offline):
    loader = create_dataloader_v1(STORY, batch_size=8, max_length=4, stride=4, shuffle=False)
    inputs, targets = next(iter(loader))
    assert inputs.shape == targets.shape == (8, 4)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    dataset = loader.dataset
    assert isinstance(dataset, GPTDatasetV1)
    assert torch.equal(inputs, torch.stack(dataset.input_ids[:8]))
    n_tokens = len(dataset.tokenizer.encode(STORY))
    assert len(dataset) == count_windows(n_tokens, 4, 4)
    assert len(loader) == len(dataset) // 8  # drop_last


def test_seeded_shuffle_is_reproducible_and_private(gpt2_offline):
    global_state = torch.get_rng_state()
    first = next(iter(create_dataloader_v1(STORY, batch_size=8, max_length=4, stride=4, seed=5)))
    again = next(iter(create_dataloader_v1(STORY, batch_size=8, max_length=4, stride=4, seed=5)))
    other = next(iter(create_dataloader_v1(STORY, batch_size=8, max_length=4, stride=4, seed=6)))
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    assert not torch.equal(first[0], other[0])
    assert torch.equal(torch.get_rng_state(), global_state)


def test_loader_errors(gpt2_offline):
    with pytest.raises(ValueError, match="batch_size"):
        create_dataloader_v1(STORY, batch_size=0, max_length=4, stride=4)
    with pytest.raises(ValueError, match="stride"):
        create_dataloader_v1(STORY, max_length=4, stride=0)
    with pytest.raises(ValueError, match=r"has \d+ tokens"):
        create_dataloader_v1("Too short.", max_length=256, stride=128)
    with pytest.raises(ValueError, match="fewer than one batch"):
        create_dataloader_v1(STORY, batch_size=500, max_length=4, stride=4)


def test_gpt_dataset_with_char_tokenizer():
    tokenizer = CharTokenizer.from_text("hello world")
    dataset = GPTDatasetV1("hello world", tokenizer, max_length=3, stride=2)
    first_input, first_target = dataset[0]
    assert tokenizer.decode(first_input) == "hel"
    assert tokenizer.decode(first_target) == "ell"
    assert len(dataset) == count_windows(11, 3, 2)


# --- small LM helpers --------------------------------------------------------------------------


def test_encode_corpus_and_split():
    text = "abcdefghij" * 10
    tokenizer = CharTokenizer.from_text(text)
    data = encode_corpus(text, tokenizer)
    assert data.dtype == torch.long and data.shape == (100,)
    train, val = train_val_split_tensor(data)
    assert len(train) == 90 and len(val) == 10
    assert torch.equal(torch.cat([train, val]), data)
    with pytest.raises(ValueError, match="val_frac"):
        train_val_split_tensor(data, val_frac=0)


def test_get_batch_shapes_shift_and_seed():
    data = torch.arange(30)  # (30,)
    xb, yb = get_batch(data, block_size=8, batch_size=6, generator=torch.Generator().manual_seed(1))
    assert xb.shape == yb.shape == (6, 8)
    assert torch.equal(yb, xb + 1)  # consecutive ids: the target is the next one
    assert torch.equal(xb[:, 1:] - xb[:, :-1], torch.ones(6, 7, dtype=torch.long))
    assert int(yb.max()) <= 29
    xb_again, _ = get_batch(data, 8, 6, torch.Generator().manual_seed(1))
    assert torch.equal(xb, xb_again)


def test_get_batch_needs_one_more_token_than_the_block():
    assert get_batch(torch.arange(9), 8, 2, torch.Generator())[0].shape == (2, 8)
    with pytest.raises(ValueError, match="has 8 tokens"):
        get_batch(torch.arange(8), 8, 2, torch.Generator())


def in_a_fresh_python(code: str) -> None:
    """Run `code` in a new interpreter (what it imports is then its own); fail on its error."""
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_scikit_learn_is_imported_only_when_other_names_are_split():
    in_a_fresh_python("import sys\nimport core.data, core.models, core.sampling\n"
                      "assert 'sklearn' not in sys.modules, 'imported too early'\n"
                      "core.data.split_names(['ann', 'bob', 'cy'], val_size=0.34)\n"
                      "assert 'sklearn' in sys.modules\n")


def test_the_shipped_split_is_what_scikit_learn_gives():
    """data/names_split.json must equal train_test_split on the shipped names (else: run
    scripts/make_names_split.py)."""
    from sklearn.model_selection import train_test_split

    from core.data import load_names, shipped_split
    from core.runs import SPLIT_SEED, VAL_SIZE

    unique_names = list(dict.fromkeys(load_names()))
    expected = train_test_split(unique_names, test_size=VAL_SIZE, random_state=SPLIT_SEED)
    assert shipped_split(unique_names, VAL_SIZE, SPLIT_SEED) == (list(expected[0]), list(expected[1]))


def test_the_stored_split_is_used_only_for_the_names_size_and_seed_it_was_made_from(tmp_path):
    from core.data import NAMES_SPLIT_PATH, load_names, shipped_split

    names = ["ann", "bob", "cy", "dee"]
    assert shipped_split(names, 0.1, 101) is None  # other names
    unique_names = list(dict.fromkeys(load_names()))
    assert shipped_split(unique_names, 0.2, 101) is None  # another size
    assert shipped_split(unique_names, 0.1, 7) is None  # another seed
    assert shipped_split(unique_names, 0.1, 101, path=tmp_path / "missing.json") is None
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    assert shipped_split(unique_names, 0.1, 101, path=broken) is None
    assert NAMES_SPLIT_PATH.exists()


def test_splitting_the_shipped_names_does_not_import_scikit_learn():
    in_a_fresh_python("import sys\nimport core.runs\n"
                      "data = core.runs.names_data(12)\n"
                      "assert len(data.val_names) == 3204, len(data.val_names)\n"
                      "assert 'sklearn' not in sys.modules, 'imported for the shipped names'\n")
