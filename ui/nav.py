"""The lesson catalogue: one entry per page file, in course order.

A lesson appears in the navigation and on the home page as soon as its file exists, so each
lesson issue only adds its page file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class PageEntry:
    file: str       # path relative to the repo root
    title: str      # navigation label
    icon: str       # material icon
    section: str    # navigation group
    url: str        # url_path = the name Streamlit infers from the file name, so a deep link
                    # resolves to the same page whether or not the entry point has run yet
    blurb: str      # one line for the home page

    @property
    def path(self) -> Path:
        return ROOT / self.file


LESSONS = [
    PageEntry("pages/1_simple_attention.py", "Simple attention", ":material/looks_one:", "Attention",
           "simple_attention", "One query, dot products, softmax and the context vector, on the book's six tokens."),
    PageEntry("pages/2_self_attention.py", "Trainable weights", ":material/looks_two:", "Attention",
           "self_attention", "W_q, W_k, W_v; queries, keys and values; why we scale by √d_k."),
    PageEntry("pages/3_causal_attention.py", "Causal mask & dropout", ":material/looks_3:", "Attention",
           "causal_attention", "Hide the future, renormalise, and drop weights at random while training."),
    PageEntry("pages/4_multi_head.py", "Multi-head attention", ":material/looks_4:", "Attention",
           "multi_head", "Several heads side by side, concatenation and the output projection."),
    PageEntry("pages/5_tokens_data.py", "Tokens & data loaders", ":material/text_fields:", "Data and a first LM",
           "tokens_data", "GPT-2 BPE vs characters, the sliding-window loader, token + position embeddings."),
    PageEntry("pages/6_small_lm.py", "Small language model", ":material/insights:", "Data and a first LM",
           "small_lm", "A bigram table against one self-attention head, trained side by side."),
    PageEntry("pages/7_train_gpt.py", "Train the names GPT", ":material/model_training:", "The names GPT",
           "train_gpt", "Train a character GPT on 32k first names live, on CPU, CUDA or MPS."),
    PageEntry("pages/8_sample_names.py", "Sample names", ":material/casino:", "The names GPT",
           "sample_names", "Sample new names with temperature, top-k and a prefix."),
    PageEntry("pages/9_inside_model.py", "Inside the model", ":material/visibility:", "The names GPT",
           "inside_model", "Attention maps of every layer and head, embeddings and their PCA."),
    PageEntry("pages/10_pitfalls.py", "Pitfalls", ":material/bug_report:", "For teachers",
           "pitfalls", "The bugs of the original notebooks, run live beside the correct code."),
]


def available_lessons() -> list[PageEntry]:
    """Lessons whose page file exists."""
    return [lesson for lesson in LESSONS if lesson.path.exists()]
