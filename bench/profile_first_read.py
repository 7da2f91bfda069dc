"""Where the first rollup read's time goes, and how many rows it copies from the database.

    .venv/bin/python -m bench.profile_first_read [--big 300000]

bench_first_read's setup (7 days x 2,000 tests x 4 jobs, then ONE commit of `--big` new
tests), then a page's rollups profiled right after the big commit and after one small upload,
counting the rows every COPY read streams (copy_frame, copy_numeric_frame).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
from typing import Any

import psycopg

from bench.bench_first_read import big_commit, page_reads
from bench.common import scratch_database, store_upload


def count_copied_rows() -> dict[str, int]:
    """Wrap the COPY readers rollup_reads uses so each read adds its frame's rows to a counter."""
    import app.db.rollup_reads as reads

    copied = {"rows": 0}
    for name in ("copy_frame", "copy_numeric_frame"):
        original = getattr(reads, name)

        def counted(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            frame = _original(*args, **kwargs)
            copied["rows"] += len(frame)
            return frame

        setattr(reads, name, counted)
    return copied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--big", type=int, default=300_000)
    parser.add_argument("--top", type=int, default=30, help="profile lines printed")
    args = parser.parse_args()

    from app.db.engine import make_engine
    from app.db.projects import create_project
    from app.demo_load import DemoSize, load_demo
    from app.services.project_reads import SharedFrames

    copied = count_copied_rows()
    with scratch_database() as (url, dsn):
        engine = make_engine(url)
        with engine.begin() as conn:
            project = create_project(conn, "bench", public=True)
        load_demo(dsn, project.id, DemoSize(days=7, tests=2000, jobs=4, pipelines_per_day=1))
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        shared = SharedFrames()
        page_reads(engine, project.id, 7, shared)
        big_commit(dsn, project.id, args.big)
        for label in ("after the big commit", "after a small upload"):
            if label.endswith("upload"):
                store_upload(dsn, project.id)
            copied["rows"] = 0
            profile = cProfile.Profile()
            profile.enable()
            seconds = page_reads(engine, project.id, 7, shared)
            profile.disable()
            print(f"== first read {label}: {seconds * 1000:.0f} ms, {copied['rows']:,} rows copied")
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(args.top)
            print(out.getvalue())
        engine.dispose()


if __name__ == "__main__":
    main()
