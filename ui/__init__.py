"""Streamlit helpers shared by every page: state and URLs, charts with downloads, code views."""
