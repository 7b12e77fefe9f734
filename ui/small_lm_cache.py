"""What the Small language model page computes once and shares between sessions.

Its cached function lives here, not in the page: a page file runs again on every rerun, and
Streamlit reads a function's source to name its cache each time the decorator is applied
(see ui/tokens_cache.py); here it is decorated once per process.
"""

from __future__ import annotations

import streamlit as st

from core.lessons import small_lm


@st.cache_data(max_entries=512, show_spinner=False)
def _untrained_sample(text: str, untrained_key: tuple, name: str, n_chars: int, prompt: str,
                      temperature: float, _race: small_lm.SmallLMRace) -> str:
    # keyed by what fixes the untrained models (RaceConfig.untrained_key), not the whole config:
    # a batch size or learning rate tried before Start draws the same text
    return _race.generate(name, n_chars, prompt, temperature, seed=_race.config.seed)


def sample_text(race_: small_lm.SmallLMRace, name: str, n_chars: int, prompt: str,
                temperature: float) -> str:
    """Model `name`'s sample. Before training the models are fixed by the corpus and the settings
    alone (their seed, and the sampling seed), so the class shares one sample per setting instead
    of every student's session drawing the same 3 x 160 characters again; the race keeps what it
    was given, so its next reruns do not even look the text up. The race asks for whole chunks
    (small_lm.SAMPLE_CHUNK), so a class nudging the length slider shares a few texts."""
    return race_.generate(name, n_chars, prompt, temperature, seed=race_.config.seed,
                          untrained=lambda drawn: _untrained_sample(race_.text, race_.config.untrained_key(),
                                                                    name, drawn, prompt, temperature, race_))
