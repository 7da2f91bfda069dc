"""The embedded PostgreSQL: one server per LAPTIME_HOME, shared by every laptime process.

pgserver ships the server binaries and reference-counts the processes using a data
directory, so `serve`, `worker` and `migrate` started side by side find one server and the
last one to exit stops it. pgserver is the `embedded` extra (`pip install 'laptime[embedded]'`);
without it a system `initdb`/`pg_ctl` is used instead (the Docker image sets DATABASE_URL).
"""

from __future__ import annotations

import contextlib
import glob
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.settings import Settings


class EmbeddedDatabaseError(RuntimeError):
    """The embedded server could not be started."""


NO_PGSERVER = (
    "install the embedded server with `pip install 'laptime[embedded]'` (the pgserver "
    "package), or put PostgreSQL's initdb/pg_ctl on PATH, or set DATABASE_URL"
)


def _system_pg_bin() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(candidates[-1]).parent if candidates else None


@contextlib.contextmanager
def _system_server(pgdata: Path) -> Iterator[str]:
    bin_dir = _system_pg_bin()
    if bin_dir is None:
        raise EmbeddedDatabaseError(f"no embedded PostgreSQL: {NO_PGSERVER}")
    if not (pgdata / "PG_VERSION").exists():
        pgdata.mkdir(parents=True, exist_ok=True)
        made = subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust"],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            # initdb refuses root, among others: say so, and how to get the embedded server.
            detail = made.stderr.strip()[-500:]
            raise EmbeddedDatabaseError(
                f"the system PostgreSQL in {bin_dir} could not initialise {pgdata}: {detail}; "
                f"{NO_PGSERVER}"
            )
    started = (
        subprocess.run(
            [str(bin_dir / "pg_ctl"), "-D", str(pgdata), "status"], capture_output=True
        ).returncode
        != 0
    )
    if started:
        subprocess.run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(pgdata),
                "-w",
                "-l",
                str(pgdata / "server.log"),
                "-o",
                f"-h '' -k {pgdata}",
                "start",
            ],
            check=True,
            capture_output=True,
        )
    try:
        yield f"postgresql+psycopg://postgres@/postgres?host={pgdata}"
    finally:
        if started:
            subprocess.run(
                [str(bin_dir / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "stop"],
                capture_output=True,
            )


@contextlib.contextmanager
def database_url(settings: Settings) -> Iterator[str]:
    """Yield a SQLAlchemy URL: DATABASE_URL as given, else the embedded server's."""
    if settings.database_url:
        yield to_sqlalchemy_url(settings.database_url)
        return
    pgdata = settings.pgdata
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        import pgserver
    except ImportError:
        with _system_server(pgdata) as url:
            yield url
        return
    server: Any = None
    for attempt in range(3):
        try:
            server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
            break
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            # pgserver gives pg_ctl ten seconds; a loaded machine can need longer.
            if attempt == 2:
                log_file = pgdata / "log"
                detail = log_file.read_text()[-2000:] if log_file.exists() else str(exc)
                raise EmbeddedDatabaseError(f"embedded PostgreSQL did not start: {detail}") from exc
    try:
        yield to_sqlalchemy_url(server.get_uri())
    finally:
        server.cleanup()


def to_sqlalchemy_url(url: str) -> str:
    """Make a libpq-style URL name the psycopg 3 driver."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def libpq_url(url: str) -> str:
    """The inverse of to_sqlalchemy_url, for psycopg.connect()."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)
