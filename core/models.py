"""Character-level language models, from a lookup table to a small GPT (the makemore ladder).

Every model has the same interface, so the trainer, sampler and charts never care which one they hold:

    logits, loss = model(idx, targets=None)   # idx (B, T) ids -> logits (B, T, V); loss or None

The loss is the mean cross-entropy over the non-padding targets (`ignore_index=-1`).

* `BigramLM`: a |V| x |V| table; the next character depends on the current one only.
* `SingleHeadLM`: the small-LM slides' model: token embedding (+ optional position embedding, which the
  slides forgot), ONE causal self-attention head, a linear layer to the vocabulary.
* `GPT` (configured by `GPTConfig`): the names GPT of lecture 7: token + position embeddings,
  `n_layer` pre-LayerNorm decoder layers (`CausalSelfAttention` + GELU feed-forward), final LayerNorm,
  linear head.

Each rung keeps the names of the course material it comes from, so a student can hold it beside
the slides or the lecture. The same things under two names:

    slides (SingleHeadLM)     lecture 7 (GPT)     what it is
    n_embd                    d_embed             width of a token's vector
    head_size                 head_dim            width of one head's queries, keys and values
    block_size                context_size        longest context (both models: `block_size`)

Both name their projections `query`, `key` and `value`; the GPT adds `out`, which mixes the heads
(the walkthrough's book classes call them `W_query`, `W_key`, `W_value` and `out_proj`).

Randomness is explicit. Models are built on the "meta" device and then filled in from a private
`torch.Generator` seeded with `seed`, so creating a model never reads or advances the global RNG (several
Streamlit sessions share one process). Dropout draws from a generator owned by the model
(`set_dropout_generator`), for the same reason.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F

from core.data import IGNORE_INDEX
from core.settings import spec

INIT_STD = 0.02  # std of the normal init of every Linear / Embedding weight (GPT-2 / nanoGPT)


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the targets that are not padding (IGNORE_INDEX)."""
    vocab_size = logits.size(-1)
    return F.cross_entropy(
        logits.reshape(-1, vocab_size),  # (B*T, V)
        targets.reshape(-1),  # (B*T,)
        ignore_index=IGNORE_INDEX,
    )


def _check_idx(idx: torch.Tensor, block_size: int | None) -> None:
    if idx.dim() != 2:
        raise ValueError(f"expected token ids of shape (batch, time), got shape {tuple(idx.shape)}")
    if block_size is not None and idx.size(1) > block_size:
        raise ValueError(
            f"sequence of {idx.size(1)} tokens is longer than the model's context of {block_size}"
        )


class SeededDropout(nn.Module):
    """Dropout whose mask comes from a `torch.Generator` the model owns, not from the global RNG.

    `nn.Dropout` draws from torch's global RNG, which every thread of the process shares: two sessions
    training at once would change each other's masks. This module draws from `self.generator`, which
    the owning model sets (see `set_dropout_generator`). Same scaling as `nn.Dropout`: kept values are
    multiplied by 1 / (1 - p) in training; evaluation is the identity.
    """

    def __init__(self, p: float):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {p}")
        self.p = p
        self.generator: torch.Generator | None = None  # set by the model that owns this module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.generator is None:
            raise RuntimeError("SeededDropout has no generator: call set_dropout_generator() first")
        keep_prob = 1.0 - self.p
        gen_device = self.generator.device
        # The mask is drawn where the generator lives (a CPU generator cannot fill a GPU tensor).
        noise = torch.rand(x.shape, generator=self.generator, device=gen_device)  # same shape as x
        keep = (noise < keep_prob).to(device=x.device, dtype=x.dtype)  # same shape as x, 0. or 1.
        return x * keep * (1.0 / keep_prob)  # same shape as x

    def extra_repr(self) -> str:
        return f"p={self.p}"


def embedding_skeleton(num_embeddings: int, embedding_dim: int) -> nn.Embedding:
    """`nn.Embedding(num_embeddings, embedding_dim)` on the meta device, its weights left unset.

    For a skeleton whose weights are filled in afterwards (`_materialize`). It is built around an
    empty weight so that nn.Embedding's own init (`normal_`) never runs on the meta device: PyTorch
    implements that one in Python behind torch._dynamo, whose first import (sympy with it) keeps
    about 70 MiB in a server for good, and a student who only reads the lessons never needs it.
    """
    weight = torch.empty(num_embeddings, embedding_dim, device="meta")  # (num_embeddings, embedding_dim)
    return nn.Embedding.from_pretrained(weight, freeze=False)


class LanguageModel(nn.Module):
    """Base class: seeded init without the global RNG, dropout generator, parameter summaries."""

    block_size: int | None = None  # longest context the model accepts (None: any length)

    def _materialize(self, seed: int) -> None:
        """Turn the meta-device skeleton built in __init__ into real CPU tensors, seeded."""
        self.to_empty(device="cpu")
        self.reset_parameters(torch.Generator().manual_seed(seed))
        self.set_dropout_generator(torch.Generator().manual_seed(seed + 1))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator) -> None:
        """Normal(0, 0.02) weights, zero biases, unit LayerNorms; deterministic given `generator`."""
        n_layer = getattr(getattr(self, "config", None), "n_layer", 1)
        for module in self.modules():  # fixed order, so the same generator gives the same weights
            if isinstance(module, nn.Linear):
                std = INIT_STD
                if getattr(module, "is_residual_projection", False):
                    # GPT-2: scale the projections that add into the residual stream by 1/sqrt(2 n_layer)
                    std = INIT_STD / math.sqrt(2 * n_layer)
                nn.init.normal_(module.weight, mean=0.0, std=std, generator=generator)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=INIT_STD, generator=generator)
            elif isinstance(module, nn.LayerNorm):
                module.reset_parameters()  # ones and zeros, no randomness
            if hasattr(module, "reset_buffers"):
                module.reset_buffers()  # e.g. causal masks, which to_empty() left uninitialised

    def set_dropout_generator(self, generator: torch.Generator) -> None:
        """Make every SeededDropout of this model draw its masks from `generator`."""
        for module in self.modules():
            if isinstance(module, SeededDropout):
                module.generator = generator

    def num_params(self) -> int:
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def layer_summary(self) -> list[dict]:
        """One row per parameter tensor: {"name", "shape", "params"}, for a table in the app."""
        return [
            {"name": name, "shape": tuple(p.shape), "params": p.numel()}
            for name, p in self.named_parameters()
        ]


class _CausalMaskMixin:
    """A boolean (block_size, block_size) buffer, True ABOVE the diagonal: the future to hide.

    The mask is defined by position (triu), never by looking for zero scores: the slides'
    `masked_fill(scores == 0, -inf)` also hid any genuine score that happened to be 0.
    """

    def _register_causal_mask(self, block_size: int) -> None:
        future = torch.empty(block_size, block_size, dtype=torch.bool)  # (T, T)
        self.register_buffer("causal_mask", future, persistent=False)
        if future.device.type != "meta":  # on meta, triu would import torch._dynamo (see embedding_skeleton)
            self.reset_buffers()

    def reset_buffers(self) -> None:
        """Refill the mask (needed after the model moved from the meta device with to_empty)."""
        size = self.causal_mask.size(0)
        future = torch.ones(size, size, dtype=torch.bool, device=self.causal_mask.device).triu(diagonal=1)  # (T, T)
        self.causal_mask.copy_(future)


# ---------------------------------------------------------------------------------------------
# Rung 1: bigram table
# ---------------------------------------------------------------------------------------------


class BigramLM(LanguageModel):
    """Row `i` of a |V| x |V| table holds the logits of the character after character `i`."""

    def __init__(self, vocab_size: int, *, seed: int = 0):
        super().__init__()
        if vocab_size < 1:
            raise ValueError(f"vocab_size must be positive, got {vocab_size}")
        self.vocab_size = vocab_size
        with torch.device("meta"):  # no global RNG use: weights are filled in by _materialize
            self.logits_table = embedding_skeleton(vocab_size, vocab_size)
        self._materialize(seed)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        _check_idx(idx, None)
        logits = self.logits_table(idx)  # (B, T, V)
        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss


# ---------------------------------------------------------------------------------------------
# Rung 2: one self-attention head (the small-LM slides, fixed)
# ---------------------------------------------------------------------------------------------


class SelfAttentionHead(_CausalMaskMixin, nn.Module):
    """One head: keys, queries, values, scaled dot products, (causal) softmax, weighted sum."""

    def __init__(self, n_embd: int, head_size: int, block_size: int, causal: bool = True):
        super().__init__()
        self.head_size = head_size
        self.causal = causal
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self._register_causal_mask(block_size)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, T, _ = x.shape
        keys = self.key(x)  # (B, T, head_size)
        queries = self.query(x)  # (B, T, head_size)
        values = self.value(x)  # (B, T, head_size)
        attn_scores = queries @ keys.transpose(1, 2) * self.head_size**-0.5  # (B, T, T)
        if self.causal:
            attn_scores = attn_scores.masked_fill(self.causal_mask[:T, :T], float("-inf"))  # (B, T, T)
        attn_weights = torch.softmax(attn_scores, dim=-1)  # (B, T, T), each row sums to 1
        context_vec = attn_weights @ values  # (B, T, head_size)
        return context_vec, attn_weights


class SingleHeadLM(LanguageModel):
    """Embedding (|V| x n_embd) + optional position embedding -> one attention head -> vocabulary.

    `use_position=False` reproduces the slides' model, which had no position embedding: apart from
    what the causal mask reveals, it cannot tell the order of the characters it attends to.
    """

    def __init__(
        self,
        vocab_size: int,
        n_embd: int = 16,
        block_size: int = 8,
        head_size: int = 16,
        use_position: bool = True,
        causal: bool = True,
        *,
        seed: int = 0,
    ):
        super().__init__()
        sizes = {"vocab_size": vocab_size, "n_embd": n_embd, "block_size": block_size, "head_size": head_size}
        for name, value in sizes.items():
            if int(value) < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.use_position = use_position
        with torch.device("meta"):
            self.token_embedding = embedding_skeleton(vocab_size, n_embd)
            self.position_embedding = embedding_skeleton(block_size, n_embd) if use_position else None
            self.sa_head = SelfAttentionHead(n_embd, head_size, block_size, causal)
            self.lm_head = nn.Linear(head_size, vocab_size)
        self._materialize(seed)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, return_attn: bool = False):
        _check_idx(idx, self.block_size)
        T = idx.size(1)
        x = self.token_embedding(idx)  # (B, T, n_embd)
        if self.position_embedding is not None:
            positions = torch.arange(T, device=idx.device)  # (T,)
            x = x + self.position_embedding(positions)  # (B, T, n_embd)
        context_vec, attn_weights = self.sa_head(x)  # (B, T, head_size), (B, T, T)
        logits = self.lm_head(context_vec)  # (B, T, V)
        loss = None if targets is None else lm_loss(logits, targets)
        if return_attn:
            return logits, loss, [attn_weights.unsqueeze(1)]  # one layer: (B, 1, T, T)
        return logits, loss


# ---------------------------------------------------------------------------------------------
# Rung 3: GPT
# ---------------------------------------------------------------------------------------------


@dataclass
class GPTConfig:
    """Architecture of the names GPT; defaults are lecture 7's values.

    Fields are declared with `spec(...)` like TrainConfig's (bounds, label, group, `short`): the
    Train page's controls are derived from them (core/train_settings.py).
    """

    # characters in the vocabulary ("." + a-z for the names)
    vocab_size: int = spec(27, internal="taken from the data: '.' and the letters of the names")
    # longest input the model reads (block size, T)
    context_size: int = spec(12, min=2, max=32, step=1, group="model", label="Context size (characters)",
                             help="How many characters the model reads at once.",
                             short="context {}")
    # number of decoder layers
    n_layer: int = spec(3, min=1, max=8, step=1, group="model", label="Layers",
                        short="{} layers", short_one="1 layer")
    # attention heads per layer; d_embed must be divisible by it
    n_head: int = spec(4, min=1, max=16, step=1, group="model", label="Heads per layer",
                       help="d_embed must be divisible by the number of heads.",
                       short="{} heads", short_one="1 head")
    # width of the token vectors (residual stream)
    d_embed: int = spec(64, min=4, max=512, step=8, group="model", label="d_embed (width)",
                        short="d_embed {}")
    # hidden width of each feed-forward block
    d_ff: int = spec(256, min=4, max=2048, step=32, group="model", label="d_ff (feed-forward width)",
                     short="d_ff {}")
    # dropout probability on attention weights and residual branches
    dropout: float = spec(0.1, min=0.0, max=0.8, step=0.05, widget="slider", group="model", label="Dropout",
                          short="dropout {:g}")
    # biases in Linear layers and LayerNorms
    bias: bool = spec(True, group="more", label="Biases in the Linear layers and LayerNorms",
                      short={True: "biases", False: "no biases"})
    # hide future positions; False is the "break it" demo: the model can peek ahead
    causal: bool = spec(True, group="model", label="Causal mask",
                        help="Off = break it: every position can read the future, including the answer.",
                        short={True: "mask on", False: "mask off"})
    # F.scaled_dot_product_attention when possible; False: always the explicit softmax path
    use_sdpa: bool = spec(True, group="more", label="Fused attention kernel (PyTorch SDPA)",
                          help="The same numbers, computed faster; off: always the explicit softmax path.",
                          short={True: "SDPA", False: "explicit attention"})

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError with a readable message if the configuration cannot build a model."""
        for name in ("vocab_size", "context_size", "n_layer", "n_head", "d_embed", "d_ff"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be a whole number, got {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be positive, got {value}")
        if self.d_embed % self.n_head != 0:
            raise ValueError(
                f"d_embed ({self.d_embed}) must be divisible by n_head ({self.n_head}): "
                "each head gets d_embed / n_head dimensions"
            )
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)):
            raise ValueError(f"dropout must be a number, got {self.dropout!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be at least 0 and below 1, got {self.dropout}")
        for name in ("bias", "causal", "use_sdpa"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")

    @property
    def head_dim(self) -> int:
        return self.d_embed // self.n_head

    def num_params(self) -> int:
        """Parameters of GPT(self), counted without building it (for size limits and the UI)."""
        d, f, V, b = self.d_embed, self.d_ff, self.vocab_size, int(self.bias)
        layer_norm = d + b * d
        attention = 4 * (d * d + b * d)  # query, key, value, out
        feed_forward = (d * f + b * f) + (f * d + b * d)
        per_layer = 2 * layer_norm + attention + feed_forward
        embeddings = V * d + self.context_size * d
        head = layer_norm + d * V + b * V  # final LayerNorm + linear to the vocabulary
        return embeddings + self.n_layer * per_layer + head

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "GPTConfig":
        """Build from plain values (a checkpoint, a URL); unknown keys are an error."""
        if not isinstance(values, dict):
            raise ValueError(f"model config must be a mapping, got {type(values).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown model config fields: {', '.join(map(str, unknown))}")
        return cls(**values)


class CausalSelfAttention(_CausalMaskMixin, nn.Module):
    """Multi-head self-attention with query/key/value/out projections.

    Two computations of the same thing:
    * fast: `F.scaled_dot_product_attention` (used in eval, and in training when dropout is 0);
    * explicit: scores = q k^T / sqrt(head_dim), mask the future by position, softmax, dropout,
      weights @ v. Used when `use_sdpa=False`, when the attention weights are asked for, and when
      training with dropout: SDPA's own dropout draws from the global RNG, ours from a seeded generator.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head = config.n_head
        self.head_dim = config.head_dim
        self.causal = config.causal
        self.use_sdpa = config.use_sdpa
        d = config.d_embed
        self.query = nn.Linear(d, d, bias=config.bias)
        self.key = nn.Linear(d, d, bias=config.bias)
        self.value = nn.Linear(d, d, bias=config.bias)
        self.out = nn.Linear(d, d, bias=config.bias)
        self.out.is_residual_projection = True
        self.attn_dropout = SeededDropout(config.dropout)  # on the attention weights
        self.resid_dropout = SeededDropout(config.dropout)  # on the output, before the residual add
        self._register_causal_mask(config.context_size)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_head, self.head_dim).transpose(1, 2)  # (B, n_head, T, head_dim)

    def forward(self, x: torch.Tensor, return_attn: bool = False, attn_mask: torch.Tensor | None = None):
        """x (B, T, d_embed) -> (out (B, T, d_embed), attention weights (B, n_head, T, T) or None).

        `attn_mask` (B, 1, T, T) bool, True where a query may attend to a key, replaces the causal mask;
        the trainer uses it for rows that pack several names (each attends only within itself).
        """
        B, T, d_embed = x.shape
        q = self._split_heads(self.query(x))  # (B, n_head, T, head_dim)
        k = self._split_heads(self.key(x))  # (B, n_head, T, head_dim)
        v = self._split_heads(self.value(x))  # (B, n_head, T, head_dim)

        dropout_active = self.training and self.attn_dropout.p > 0
        attn_weights = None
        if self.use_sdpa and not return_attn and not dropout_active:
            if attn_mask is not None:
                context_vec = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)  # (B, n_head, T, head_dim)
            else:
                context_vec = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)  # (B, n_head, T, head_dim)
        else:
            attn_scores = q @ k.transpose(-2, -1) * self.head_dim**-0.5  # (B, n_head, T, T)
            # two masks, two conventions: a packed batch's attn_mask is True where a query MAY look
            # (its own name's earlier letters), so ~ hides the rest; causal_mask is True where it
            # may NOT (the future), as in the walkthrough's causal_mask
            if attn_mask is not None:
                attn_scores = attn_scores.masked_fill(~attn_mask, float("-inf"))  # (B, n_head, T, T)
            elif self.causal:
                attn_scores = attn_scores.masked_fill(self.causal_mask[:T, :T], float("-inf"))  # (B, n_head, T, T)
            attn_weights = torch.softmax(attn_scores, dim=-1)  # (B, n_head, T, T), rows sum to 1 over keys
            context_vec = self.attn_dropout(attn_weights) @ v  # (B, n_head, T, head_dim)

        context_vec = context_vec.transpose(1, 2).contiguous().view(B, T, d_embed)  # (B, T, d_embed)
        out = self.resid_dropout(self.out(context_vec))  # (B, T, d_embed)
        return out, attn_weights


class FeedForward(nn.Module):
    """Position-wise MLP: d_embed -> d_ff -> GELU -> d_embed, then dropout."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.fc1 = nn.Linear(config.d_embed, config.d_ff, bias=config.bias)
        self.activation = nn.GELU()
        self.fc2 = nn.Linear(config.d_ff, config.d_embed, bias=config.bias)
        self.fc2.is_residual_projection = True
        self.dropout = SeededDropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.activation(self.fc1(x))  # (B, T, d_ff)
        return self.dropout(self.fc2(hidden))  # (B, T, d_embed)


class DecoderLayer(nn.Module):
    """Pre-LayerNorm block: x + attention(LN(x)), then x + feed_forward(LN(x))."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.layer_norm1 = nn.LayerNorm(config.d_embed, bias=config.bias)
        self.self_attention = CausalSelfAttention(config)
        self.layer_norm2 = nn.LayerNorm(config.d_embed, bias=config.bias)
        self.feed_forward = FeedForward(config)

    def forward(self, x: torch.Tensor, return_attn: bool = False, attn_mask: torch.Tensor | None = None):
        attn_out, attn_weights = self.self_attention(self.layer_norm1(x), return_attn, attn_mask)  # (B, T, d_embed)
        x = x + attn_out  # (B, T, d_embed)
        x = x + self.feed_forward(self.layer_norm2(x))  # (B, T, d_embed)
        return x, attn_weights


class GPT(LanguageModel):
    """Token + position embeddings -> n_layer decoder layers -> LayerNorm -> linear head."""

    def __init__(self, config: GPTConfig, *, seed: int = 0):
        super().__init__()
        config.validate()
        self.config = config
        self.block_size = config.context_size
        with torch.device("meta"):  # no global RNG use: weights are filled in by _materialize
            self.token_embedding = embedding_skeleton(config.vocab_size, config.d_embed)
            self.position_embedding = embedding_skeleton(config.context_size, config.d_embed)
            self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_layer))
            self.final_norm = nn.LayerNorm(config.d_embed, bias=config.bias)
            self.lm_head = nn.Linear(config.d_embed, config.vocab_size, bias=config.bias)
        self._materialize(seed)

    def forward(
        self,
        idx: torch.Tensor,
        targets: torch.Tensor | None = None,
        return_attn: bool = False,
        *,
        positions: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ):
        """logits (B, T, V), loss (or None); with return_attn also a list of (B, n_head, T, T) per layer.

        `positions` (B, T) and `attn_mask` (B, 1, T, T) are for packed rows (several names in one row,
        each with positions from 0 and attending only within itself); by default positions are
        0..T-1 and the mask is causal. Packed rows may be longer than context_size.
        """
        _check_idx(idx, self.block_size if positions is None else None)
        if positions is None:
            positions = torch.arange(idx.size(1), device=idx.device)  # (T,)
        x = self.token_embedding(idx) + self.position_embedding(positions)  # (B, T, d_embed)
        attn_list = []
        for layer in self.layers:
            x, attn_weights = layer(x, return_attn, attn_mask)  # (B, T, d_embed)
            attn_list.append(attn_weights)
        x = self.final_norm(x)  # (B, T, d_embed)
        logits = self.lm_head(x)  # (B, T, V)
        loss = None if targets is None else lm_loss(logits, targets)
        if return_attn:
            return logits, loss, attn_list
        return logits, loss


# ---------------------------------------------------------------------------------------------
# Registry and generation
# ---------------------------------------------------------------------------------------------

MODEL_KINDS = ("bigram", "single_head", "gpt")  # the ladder, simplest first


def build_model(kind: str, vocab_size: int, **kwargs) -> LanguageModel:
    """Build one rung of the ladder: "bigram", "single_head" or "gpt" (kwargs go to its constructor
    or, for "gpt", to GPTConfig; `seed` is accepted by all three)."""
    seed = kwargs.pop("seed", 0)
    try:
        if kind == "bigram":
            if kwargs:
                raise TypeError(f"unexpected settings {sorted(kwargs)}")
            return BigramLM(vocab_size, seed=seed)
        if kind == "single_head":
            return SingleHeadLM(vocab_size, seed=seed, **kwargs)
        if kind == "gpt":
            return GPT(GPTConfig(vocab_size=vocab_size, **kwargs), seed=seed)
    except TypeError as exc:  # an unknown keyword: a user-fixable settings problem
        raise ValueError(f"invalid settings for model {kind!r}: {exc}") from None
    raise ValueError(f"unknown model kind {kind!r}: choose one of {', '.join(MODEL_KINDS)}")


def check_sampling_args(temperature: float, top_k: int | None) -> None:
    if not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a number above 0, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive whole number or None, got {top_k!r}")


@torch.no_grad()
def generate(
    model: nn.Module,
    idx: torch.Tensor,
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    block_size: int | None = None,
    stop_token: int | None = None,
) -> torch.Tensor:
    """Append `max_new_tokens` sampled ids to `idx` (B, T); returns (B, T + new).

    The context fed to the model is cropped to its last `block_size` ids (default: the model's own
    block size). Sampling draws from `generator` (on the generator's device, so a CPU generator also
    works for a GPU model). With `stop_token`, generation ends early once every row has produced it.
    The model is put in eval mode for the duration and restored afterwards.
    """
    check_sampling_args(temperature, top_k)
    if block_size is None:
        block_size = getattr(model, "block_size", None)
    was_training = model.training
    model.eval()
    try:
        finished = torch.zeros(idx.size(0), dtype=torch.bool, device=idx.device)  # (B,)
        for _ in range(max_new_tokens):
            idx_cond = idx if block_size is None else idx[:, -block_size:]  # (B, <=block_size)
            logits, _ = model(idx_cond)[:2]  # (B, T, V)
            logits = logits[:, -1, :] / temperature  # (B, V)
            if top_k is not None:
                kth_best = torch.topk(logits, min(top_k, logits.size(-1)), dim=-1).values[:, [-1]]  # (B, 1)
                logits = logits.masked_fill(logits < kth_best, float("-inf"))  # (B, V)
            probs = torch.softmax(logits, dim=-1)  # (B, V)
            if generator is not None and generator.device != probs.device:
                probs = probs.to(generator.device)
            next_id = torch.multinomial(probs, num_samples=1, generator=generator).to(idx.device)  # (B, 1)
            idx = torch.cat((idx, next_id), dim=1)  # (B, T + 1)
            if stop_token is not None:
                finished |= next_id.squeeze(1) == stop_token
                if bool(finished.all()):
                    break
    finally:
        model.train(was_training)
    return idx
