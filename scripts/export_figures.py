"""Render the standard lecture figures to PNG (2x) and SVG, with no browser and no server.

    python scripts/export_figures.py --out figures/ [--steps 300] [--lecture]

The set: each walkthrough step on the book's example (scores, weights, context, the all-token
weight matrix), the self-attention weights with trainable W (seed 789), the causal mask before
and after, the per-head heatmaps of multi-head attention (seed 123), the loss curve of a short
seeded training run of the names GPT, and the PCA of its character embeddings. Every figure
carries a caption with the settings and seed that made it. Charts come from core/viz, the
same builders the pages use, saved through Altair's own vl-convert.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402

from core import attention as att  # noqa: E402
from core import viz as charts  # noqa: E402
from core.data import build_names_data  # noqa: E402
from core.training import Trainer, quick_demo_config  # noqa: E402

QUERY = 1  # "journey", the book's query token


def walkthrough_figures(lecture: bool) -> list[tuple[str, str, str, object]]:
    """(file stem, title, caption, chart) for the simple-attention steps."""
    x = att.book_embeddings()
    tokens = att.BOOK_TOKENS
    scores = att.attn_scores_matmul(x, QUERY)
    weights = att.attn_weights_softmax(scores)
    context = att.context_vec_matmul(x, weights)
    all_weights = att.all_attn_weights(att.all_attn_scores(x))
    book = "book example 'Your journey starts with one step', 3-d embeddings"
    return [
        ("01_scores", "Attention scores ω for the query 'journey'",
         f"ω_i = x_journey · x_i, {book}; shape (6,)",
         charts.bar_chart(scores, tokens, x_title="key token", y_title="ω", fmt=".4f",
                          lecture=lecture, highlight=QUERY)),
        ("02_weights", "Attention weights α = softmax(ω)",
         f"softmax over the 6 keys, sums to 1; {book}; shape (6,)",
         charts.bar_chart(weights, tokens, x_title="key token", y_title="α", fmt=".4f",
                          lecture=lecture, highlight=QUERY)),
        ("03_context", "Context vector z for 'journey'",
         f"z = Σ α_i x_i, {book}; shape (3,)",
         charts.bar_chart(context, ["dim 0", "dim 1", "dim 2"], x_title="dimension",
                          y_title="z", fmt=".4f", lecture=lecture)),
        ("04_all_weights", "All attention weights softmax(X Xᵀ)",
         f"row = query, column = key, rows sum to 1; {book}; shape (6, 6)",
         charts.heatmap(all_weights, tokens, tokens, x_title="key", y_title="query",
                        fmt=".2f", lecture=lecture, domain=(0.0, 1.0))),
    ]


def self_attention_figures(lecture: bool) -> list[tuple[str, str, str, object]]:
    """Trainable weights (SelfAttentionV2, seed 789) and the causal mask before/after."""
    x = att.book_embeddings()
    tokens = att.BOOK_TOKENS
    torch.manual_seed(789)
    sa = att.SelfAttentionV2(3, 2)
    plain = att.intermediates_from_module(sa, x, training=False)
    causal = att.attention_intermediates(x, sa.W_query.weight.T.detach(), sa.W_key.weight.T.detach(),
                                         sa.W_value.weight.T.detach(), causal=True)
    setting = "SelfAttentionV2(3, 2), torch.manual_seed(789), book embeddings"
    return [
        ("05_self_attention_weights", "Self-attention weights with trainable W_q, W_k, W_v",
         f"softmax(Q Kᵀ / √2), {setting}; shape (6, 6)",
         charts.heatmap(plain.attn_weights[0].detach(), tokens, tokens, x_title="key",
                        y_title="query", lecture=lecture, domain=(0.0, 1.0))),
        ("06_masked_scores", "Causal mask: scaled scores with the future set to −∞",
         f"masked_fill(triu(ones, 1), −inf) before softmax; {setting}; shape (6, 6)",
         charts.heatmap(causal.masked_scores[0].detach(), tokens, tokens, x_title="key",
                        y_title="query", lecture=lecture)),
        ("07_causal_weights", "Causal attention weights (renormalised over the past)",
         f"softmax of the masked scores: zeros above the diagonal, rows sum to 1; {setting}",
         charts.heatmap(causal.attn_weights[0].detach(), tokens, tokens, x_title="key",
                        y_title="query", lecture=lecture, domain=(0.0, 1.0))),
    ]


def multi_head_figures(lecture: bool) -> list[tuple[str, str, str, object]]:
    """One heatmap per head of MultiHeadAttention(3, 4, 6, 0.0, num_heads=2), seed 123."""
    x = att.book_embeddings()
    torch.manual_seed(123)
    mha = att.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    steps = att.intermediates_from_module(mha, x, training=False)
    figures = []
    for head in range(steps.num_heads):
        figures.append((f"08_head_{head}", f"Multi-head attention: head {head} of 2",
                        "MultiHeadAttention(d_in=3, d_out=4, heads=2, causal), "
                        "torch.manual_seed(123), book embeddings; head_dim 2; shape (6, 6)",
                        charts.heatmap(steps.attn_weights[head].detach(), att.BOOK_TOKENS,
                                       att.BOOK_TOKENS, x_title="key", y_title="query",
                                       lecture=lecture, domain=(0.0, 1.0))))
    return figures


def training_figures(steps: int, lecture: bool) -> list[tuple[str, str, str, object]]:
    """Loss curve of a short seeded run of the quick-demo preset, and the PCA of its embeddings."""
    config = quick_demo_config()
    config = replace(config, max_steps=steps, val_interval=max(10, steps // 6),
                     warmup_steps=min(config.warmup_steps, steps // 5), val_batches=8)
    data = build_names_data(context_size=config.model.context_size, seed=config.seed)
    trainer = Trainer(config, data)
    trainer.train(n_steps=steps)
    h = trainer.history
    train_df = pd.DataFrame({"step": h["steps"], "loss": h["train_loss"]})
    train_df["loss"] = train_df["loss"].rolling(20, min_periods=1).mean()
    train_df["series"] = "train (smoothed over 20 steps)"
    val_df = pd.DataFrame({"step": h["val_steps"], "loss": h["val_loss"], "series": "validation"})
    curve = charts.line_chart(pd.concat([train_df, val_df]), x="step", y="loss", series="series",
                              x_title="step", y_title="loss (nats/char)", lecture=lecture)
    setting = (f"quick-demo preset, {steps} steps, AdamW lr {config.lr}, batch {config.batch_size}, "
               f"seed {config.seed}, CPU")
    emb = trainer.model.token_embedding.weight.detach().cpu().numpy()
    xy = PCA(n_components=2, random_state=0).fit_transform(emb)
    vocab = data.tokenizer.vocab
    kind = ["end ." if c == "." else "vowel" if c in "aeiouy" else "consonant" for c in vocab]
    pca_df = pd.DataFrame({"PC1": xy[:, 0], "PC2": xy[:, 1], "char": vocab, "kind": kind})
    return [
        ("09_loss_curve", "Training the names GPT", f"per-character cross-entropy; {setting}",
         curve),
        ("10_embedding_pca", "Character embeddings, first two principal components",
         f"PCA of the token embedding matrix {tuple(emb.shape)} after training; {setting}",
         charts.scatter(pca_df, x="PC1", y="PC2", label="char", group="kind", lecture=lecture)),
    ]


def export(out: Path, steps: int = 300, lecture: bool = False) -> list[dict]:
    """Write every figure as PNG (2x) and SVG; return a manifest of what was written."""
    out.mkdir(parents=True, exist_ok=True)
    figures = (walkthrough_figures(lecture) + self_attention_figures(lecture)
               + multi_head_figures(lecture) + training_figures(steps, lecture))
    manifest = []
    for stem, title, caption, chart in figures:
        figure = charts.themed(charts.with_caption(chart, title, caption), lecture)
        png, svg = out / f"{stem}.png", out / f"{stem}.svg"
        png.write_bytes(charts.to_png(figure, scale=2.0))
        svg.write_text(charts.to_svg(figure), encoding="utf-8")
        manifest.append({"name": stem, "title": title, "caption": caption,
                         "png": png.name, "svg": svg.name})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("figures"), help="output folder")
    parser.add_argument("--steps", type=int, default=300, help="training steps for the loss curve")
    parser.add_argument("--lecture", action="store_true", help="lecture-mode theme (big text)")
    args = parser.parse_args(argv)
    if args.steps < 10:
        parser.error("--steps must be at least 10")
    torch.set_num_threads(2)
    manifest = export(args.out, steps=args.steps, lecture=args.lecture)
    for item in manifest:
        print(f"{item['png']:<32} {item['title']}")
    print(f"wrote {2 * len(manifest)} files to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
