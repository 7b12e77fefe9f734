"""Fixtures of the class-mode tests: a database URL per test, on SQLite and on a real PostgreSQL.

The PostgreSQL server is Debian's (`postgresql` package, installed by .ci/run), started once per
test session in a temporary folder: `initdb` + `pg_ctl` as the `postgres` user, listening on a Unix
socket only (`listen_addresses=''`). Each test gets a fresh database on it. When the binaries are
missing the PostgreSQL tests FAIL (so CI cannot pass without testing that path); set
ATTENTION_LAB_NO_PG=1 to skip them on purpose.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from core.classroom import store

PG_BIN = Path(os.environ.get("ATTENTION_LAB_PG_BIN", "/usr/lib/postgresql/15/bin"))
BACKENDS = ("sqlite", "postgresql")


def _as_postgres(*args: str, **kwargs) -> subprocess.CompletedProcess:
    command = list(args)
    if os.geteuid() == 0:  # initdb refuses to run as root
        command = ["runuser", "-u", "postgres", "--", *command]
    return subprocess.run(command, check=True, capture_output=True, text=True, timeout=120, **kwargs)


@pytest.fixture(scope="session")
def pg_server():
    """The socket folder of a running PostgreSQL server (stopped and removed after the session)."""
    if os.environ.get("ATTENTION_LAB_NO_PG") == "1":
        pytest.skip("ATTENTION_LAB_NO_PG=1: PostgreSQL tests skipped on purpose")
    if not (PG_BIN / "initdb").exists():
        pytest.fail(f"PostgreSQL is not installed ({PG_BIN / 'initdb'} is missing): install Debian's "
                    "`postgresql` package (.ci/run does), or set ATTENTION_LAB_NO_PG=1 to skip these tests")
    folder = Path(tempfile.mkdtemp(prefix="attention-lab-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data = folder / "data"
    _as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
    options = f"-k {folder} -c listen_addresses='' -c max_connections=200"
    _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start")
    try:
        yield folder
    finally:
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server):
    """A fresh, empty database on the test server; dropped afterwards."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    admin = f"postgresql://postgres@/postgres?host={pg_server}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql+psycopg://postgres@/{name}?host={pg_server}"
    yield url
    store.dispose_engine(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path):
    url = store.default_url(tmp_path / "classroom")
    yield url
    store.dispose_engine(url)


@pytest.fixture(params=BACKENDS)
def db_url(request):
    """One URL per backend: every store test runs on SQLite and on PostgreSQL."""
    return request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
