"""`laptime demo-data`: fill a project with a realistic synthetic history."""

from __future__ import annotations

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from app.cli.database import open_database
from app.db.embedded import libpq_url
from app.db.engine import make_engine
from app.db.projects import create_project, create_token, get_project
from app.settings import Settings


@click.command("demo-data")
@click.option("--project", "slug", default="demo", show_default=True, help="Project to fill.")
@click.option("--days", default=14, show_default=True, help="Days of history.")
@click.option("--tests", default=2000, show_default=True, help="Tests in the suite.")
@click.option("--jobs", default=4, show_default=True, help="CI jobs per pipeline (1-16).")
@click.option("--pipelines-per-day", default=3, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--public", is_flag=True, help="Make a new demo project readable by anyone.")
def demo_data(
    slug: str, days: int, tests: int, jobs: int, pipelines_per_day: int, seed: int, public: bool
) -> None:
    """Store a synthetic history (heavy tails, huge files, parametrize explosions, flaky tests).

    10 million results: --days 60 --tests 10000 --jobs 16 --pipelines-per-day 1.
    """
    from app.demo_load import DemoSize, load_demo

    size = DemoSize(
        days=days, tests=tests, jobs=jobs, pipelines_per_day=pipelines_per_day, seed=seed
    )
    settings = Settings()
    with open_database(settings) as url:
        engine = make_engine(url, pool_size=1)
        token = None
        with engine.begin() as conn:
            project = get_project(conn, slug)
            if project is None:
                project = create_project(conn, slug, public=public)
                token = create_token(conn, project, "admin")
        engine.dispose()
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        ) as bar:
            task = bar.add_task(f"storing results into {project.slug}", total=size.results)
            try:
                stored = load_demo(
                    libpq_url(url),
                    project.id,
                    size,
                    progress=lambda n: bar.advance(task, n),
                )
            except ValueError as exc:
                raise click.ClickException(str(exc)) from exc
    click.echo(f"stored {stored} results for project {project.slug}")
    if token is not None:
        click.echo("admin token for the new project (shown once):")
        click.echo(token)
