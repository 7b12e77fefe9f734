"""Tests of class mode (core/classroom): storage on SQLite and PostgreSQL, security, the challenge."""
