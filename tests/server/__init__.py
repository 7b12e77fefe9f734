"""Tests of server/: Streamlit runtime access, housekeeping, the memory probe."""
