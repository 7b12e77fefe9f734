"""The lessons: one module per lesson, holding that lesson's computations only (no charts, no HTML).

- `walkthrough`: what the four attention walkthrough pages share (settings, steps, book numbers,
  the PyTorch SDPA check, captions naming the inputs); `embeddings`: the shared embeddings table;
- `simple_attention` (page 1), `self_attention` (page 2, and the √d_k experiment),
  `causal_attention` (page 3), `multi_head` (page 4);
- `text`: the built-in texts and the judge of a user's own text (pages 5 and 6);
- `tokens_data` (page 5): tokens, sliding windows, batches, embeddings, padded name windows;
- `small_lm` (page 6): bigram vs one self-attention head (`SmallLMRace`), cross-entropy by hand;
- `sample_names` (page 8) and `inside_model` (page 9): what a trained names GPT generates, and
  what it does with a typed name.
"""
