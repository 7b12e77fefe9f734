"""The Inside-the-model lesson (page 9): what a trained names GPT does with a typed name.

* `InsideSettings`: the page's controls;
* `inspect_name`: attention weights of every layer and head and the next-character probabilities
  for one name (`Inspection`), with `top_predictions` as a table;
* `embedding_pca`, `vowel_separation`, `initial_separation`: the character embeddings in 2-D and
  how far training has pulled vowels and consonants apart.
The charts of this page are in core.viz.names_model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from core.lessons.sample_names import in_alphabet
from core.models import GPT, GPTConfig
from core.runs import Run
from core.settings import spec
from core.tokenizers import BOUNDARY_TOKEN, CharTokenizer

@dataclass
class InsideSettings:
    """Controls of the Inside-the-model page."""

    name: str = spec("emma", max_len=40, label="Name")  # the name fed to the model
    # the enlarged attention map's layer and head, counted from 1 as the page names them (a link
    # that says layer=2 shows "layer 2")
    layer: int = spec(1, min=1, max=16)
    head: int = spec(1, min=1, max=16)



@dataclass
class Inspection:
    """Everything the Inside page shows for one typed name."""

    tokens: list[str]  # ".", then the characters of the name (what the model reads)
    attn: np.ndarray  # (n_layer, n_head, T, T) attention weights: query rows, key columns
    probs: np.ndarray  # (T, V) next-character probabilities at each position
    vocab: list[str]  # column labels of probs
    truncated: bool  # the name was longer than the context and was cut
    causal: bool = True  # the model hides the future (False: trained with the mask off)


def clean_name(name: str, tokenizer: CharTokenizer) -> str:
    """The typed name in the model's alphabet, or ValueError saying what is wrong."""
    if not str(name).strip():
        raise ValueError("type a name (letters a–z).")
    return in_alphabet(name, tokenizer, "the name")


@torch.no_grad()
def inspect_name(model: GPT, tokenizer: CharTokenizer, name: str) -> Inspection:
    """Attention weights of every layer and head, and next-character probabilities, for `name`."""
    text = clean_name(name, tokenizer)
    block = model.config.context_size
    truncated = len(text) + 1 > block
    tokens = [BOUNDARY_TOKEN] + list(text[: block - 1])
    device = next(model.parameters()).device
    idx = torch.tensor([tokenizer.encode("".join(tokens))], dtype=torch.long, device=device)  # (1, T)
    was_training = model.training
    model.eval()
    try:
        logits, _, attn_list = model(idx, return_attn=True)  # (1, T, V), [(1, n_head, T, T)] * n_layer
    finally:
        model.train(was_training)
    attn = torch.stack([a[0] for a in attn_list]).cpu().numpy()  # (n_layer, n_head, T, T)
    probs = torch.softmax(logits[0], dim=-1).cpu().numpy()  # (T, V)
    return Inspection(tokens, attn, probs, tokenizer.vocab, truncated, model.config.causal)



def top_predictions(inspection: Inspection, k: int = 3) -> pd.DataFrame:
    """Per position: what was read, the k most likely next characters and their probabilities."""
    text = "".join(inspection.tokens)
    rows = []
    for t in range(len(inspection.tokens)):
        order = np.argsort(-inspection.probs[t])[:k]
        rows.append({"position": t, "read so far": text[: t + 1],
                     "actually next": text[t + 1] if t + 1 < len(text) else "(end or beyond)",
                     "most likely next": ", ".join(f"{inspection.vocab[i]} {inspection.probs[t, i]:.2f}"
                                                   for i in order)})
    return pd.DataFrame(rows)


VOWELS = set("aeiou")
# the PCA's groups, in the order the chart colours them: the vowels, whose separation is the
# lesson, take the second, warm colour beside the consonants' blue
CHAR_GROUPS = ("consonant", "vowel", "start/end .")


def char_group(char: str) -> str:
    """A character's group in the PCA chart (one of CHAR_GROUPS)."""
    if char == BOUNDARY_TOKEN:
        return CHAR_GROUPS[2]
    return CHAR_GROUPS[1] if char in VOWELS else CHAR_GROUPS[0]


def embedding_matrix(model: GPT) -> np.ndarray:
    return model.token_embedding.weight.detach().cpu().numpy()  # (V, d_embed)



def embedding_pca(model: GPT, tokenizer: CharTokenizer) -> tuple[pd.DataFrame, np.ndarray]:
    """2-D PCA of the character embeddings: rows (char, PC1, PC2, group), explained variance ratios."""
    from sklearn.decomposition import PCA  # imported here: only this page needs it

    weights = embedding_matrix(model)  # (V, d_embed)
    pca = PCA(n_components=2, random_state=0)
    coords = pca.fit_transform(weights)  # (V, 2)
    # PCA's sign is arbitrary: fix it so the picture does not flip between runs of the page
    for dim in range(2):
        if coords[int(np.argmax(np.abs(coords[:, dim]))), dim] < 0:
            coords[:, dim] *= -1
    df = pd.DataFrame({"char": tokenizer.vocab, "PC1": coords[:, 0], "PC2": coords[:, 1],
                       "group": [char_group(c) for c in tokenizer.vocab]})
    # identical embeddings (all zero, say) have no variance to explain: sklearn divides 0 by 0
    return df, np.nan_to_num(pca.explained_variance_ratio_, nan=0.0)



def vowel_separation(df: pd.DataFrame) -> float:
    """Distance between the vowel and consonant centroids in the PCA plane, over the mean spread
    (a number that grows as training separates the two groups)."""
    letters = df[df["group"].isin(["vowel", "consonant"])]
    is_vowel = (letters["group"] == "vowel").to_numpy()
    if is_vowel.all() or not is_vowel.any():
        return 0.0
    return float(_separation(letters[["PC1", "PC2"]].to_numpy(), is_vowel[None])[0])


def _separation(points: np.ndarray, is_vowel: np.ndarray) -> np.ndarray:
    """vowel_separation for each row of `is_vowel` (S, N) over the same points (N, 2): (S,)."""
    vowel_count = is_vowel.sum(1, keepdims=True)  # (S, 1)
    vowel_centre = (is_vowel[..., None] * points).sum(1) / vowel_count  # (S, 2)
    consonant_centre = ((~is_vowel)[..., None] * points).sum(1) / (len(points) - vowel_count)  # (S, 2)
    centre = np.where(is_vowel[..., None], vowel_centre[:, None], consonant_centre[:, None])  # (S, N, 2)
    spread = np.linalg.norm(points - centre, axis=-1).mean(1)  # (S,)
    return np.linalg.norm(vowel_centre - consonant_centre, axis=-1) / (spread + 1e-12)


def chance_separation(df: pd.DataFrame, shuffles: int = 1000, seed: int = 0) -> tuple[float, float]:
    """The separation the same points give when the vowel and consonant labels are dealt out at
    random (groups of the same sizes), `shuffles` times: (the mean, the 95th percentile). Never near
    0: 5 points against 21 have centres apart by chance alone, so this is the bar a trained model's
    separation has to clear."""
    letters = df[df["group"].isin(["vowel", "consonant"])]
    is_vowel = (letters["group"] == "vowel").to_numpy()
    if is_vowel.all() or not is_vowel.any():
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    dealt = rng.permuted(np.tile(is_vowel, (shuffles, 1)), axis=1)  # (shuffles, N)
    scores = _separation(letters[["PC1", "PC2"]].to_numpy(), dealt)
    return float(scores.mean()), float(np.percentile(scores, 95))


@functools.lru_cache(maxsize=16)
def _initial_separation(config_items: tuple, seed: int) -> float:
    model = GPT(GPTConfig(**dict(config_items)), seed=seed)
    tokenizer = CharTokenizer.from_text("abcdefghijklmnopqrstuvwxyz"[: model.config.vocab_size - 1])
    return vowel_separation(embedding_pca(model, tokenizer)[0])


def initial_separation(run: Run) -> float:
    """Vowel/consonant separation of the same model before training (same architecture, seed)."""
    config = run.trainer.config
    return _initial_separation(tuple(sorted(config.model.to_dict().items())), config.seed)
