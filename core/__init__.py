"""Attention Lab core: attention math, data, models and training, with no Streamlit import."""
