"""Class mode: a lecturer's class with polls, follow-the-lecturer and a training challenge.

No Streamlit here. `security` (keys, codes, nicknames, rate limits), `store` (the database, through
SQLAlchemy: SQLite by default, PostgreSQL for replicas), `challenge` (the server's evaluation of a
submitted checkpoint). The class pages are thin layers over these.
"""
