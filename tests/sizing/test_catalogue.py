"""Shipped catalogues, user overrides, validation messages and machine-name matching."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis.sizing.catalogue import (
    SHIPPED,
    CatalogueError,
    load_catalogue_data,
    load_catalogue_text,
    machine_prices,
    merge_catalogues,
    price_per_min,
    resolve_catalogues,
    shipped_catalogues,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "catalogues.md"
ENTRY = """
[[machine]]
name = "{name}"
os = "linux"
arch = "x64"
vcpus = {vcpus}
memory_gib = 8
usd_per_min = 0.01
source = "https://example.com/p"
as_of = "2026-12-01"
"""


def user_text(*entries: str, head: str = 'name = "circleci"') -> str:
    return "[catalogue]\n" + head + "\n" + "".join(entries)


def test_every_shipped_entry_has_a_source_and_date() -> None:
    catalogues = shipped_catalogues()
    assert sorted(catalogues) == sorted(SHIPPED)
    for catalogue in catalogues.values():
        assert catalogue.machines
        for machine in catalogue.machines:
            assert re.match(r"https://", machine.source), machine.name
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", machine.as_of), machine.name
            assert catalogue.rate_per_min(machine) is not None, machine.name


def test_every_shipped_catalogue_and_entry_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name, catalogue in shipped_catalogues().items():
        assert f"`{name}`" in text
        for machine in catalogue.machines:
            assert f"`{machine.name}`" in text, f"{name}:{machine.name} missing from the docs"


def test_circleci_story_classes_and_credit_price() -> None:
    circleci = shipped_catalogues()["circleci"]
    expected = {
        "small": (1, 2, 5),
        "medium": (2, 4, 10),
        "medium+": (3, 6, 15),
        "large": (4, 8, 20),
        "xlarge": (8, 16, 40),
        "2xlarge": (16, 32, 80),
        "2xlarge+": (20, 40, 100),
    }
    for name, (vcpus, gib, credits) in expected.items():
        m = circleci.get(name)
        assert (m.vcpus, m.memory_gib, m.credits_per_min) == (vcpus, gib, credits)
    assert circleci.credit_price_usd == 0.0006
    # 100 credits x $0.0006 = $0.06 a minute; xlarge is 40% of that.
    assert price_per_min(circleci, "2xlarge+") == pytest.approx(0.06)
    assert price_per_min(circleci, "xlarge") == pytest.approx(0.024)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("large", "large"),
        ("  LARGE ", "large"),
        ("circleci:large", "large"),
        ("CircleCI : xlarge", "xlarge"),
        ("resource_class: 2xlarge+", "2xlarge+"),
        ("circleci:resource_class:medium+", "medium+"),
        ("docker.small", "small"),
        ("machine: large", "machine.large"),
        ("macos.m4pro.medium", "m4pro.medium"),
    ],
)
def test_machine_names_match(text: str, expected: str) -> None:
    machine = shipped_catalogues()["circleci"].match(text)
    assert machine is not None
    assert machine.name == expected


@pytest.mark.parametrize("text", ["larger", "github:large", "3xlarge", ""])
def test_unknown_names_do_not_match(text: str) -> None:
    assert shipped_catalogues()["circleci"].match(text) is None
    assert price_per_min(shipped_catalogues()["circleci"], text) is None


def test_github_labels_and_gitlab_tags() -> None:
    catalogues = shipped_catalogues()
    github = catalogues["github"]
    assert github.get("ubuntu-latest").name == "linux"
    assert github.get("runs-on: ubuntu-latest").vcpus == 2
    assert price_per_min(github, "linux_16_core") == pytest.approx(0.042)
    gitlab = catalogues["gitlab"]
    assert gitlab.get("tags: saas-linux-large-amd64").credits_per_min == 3
    # No dollar price for GitLab compute minutes is shipped: never a made-up one.
    assert price_per_min(gitlab, "saas-linux-large-amd64") is None


def test_machine_prices_for_the_planner() -> None:
    circleci = shipped_catalogues()["circleci"]
    prices = machine_prices(circleci, ["circleci:large", "large", "nope", None])
    assert prices == pytest.approx({"circleci:large": 0.012, "large": 0.012})
    # A frame's unknown machine is NaN: left out like None (it failed the compare answer).
    assert machine_prices(circleci, ["large", float("nan")]) == pytest.approx({"large": 0.012})  # type: ignore[list-item]


def test_user_catalogue_overrides_and_extends_shipped() -> None:
    user = load_catalogue_text(
        user_text(ENTRY.format(name="xlarge", vcpus=8), ENTRY.format(name="custom", vcpus=64)),
        source="mine.toml",
    )
    merged = resolve_catalogues([user])["circleci"]
    # xlarge now costs $0.01 a minute in dollars; the other shipped classes keep credits.
    assert price_per_min(merged, "xlarge") == pytest.approx(0.01)
    assert price_per_min(merged, "large") == pytest.approx(0.012)
    assert merged.get("custom").vcpus == 64
    assert len(merged.machines) == len(shipped_catalogues()["circleci"].machines) + 1
    assert "mine.toml" in merged.source


def test_new_user_catalogue_is_added() -> None:
    user = load_catalogue_text(
        user_text(ENTRY.format(name="box", vcpus=4), head='name = "lab"'), source="lab.toml"
    )
    catalogues = resolve_catalogues([user])
    assert set(catalogues) == {*SHIPPED, "lab"}
    assert catalogues["lab"].get("BOX").vcpus == 4


def test_yaml_shaped_data_with_dates_loads() -> None:
    import datetime as dt

    data = {
        "catalogue": {"name": "y", "as_of": dt.date(2026, 12, 1)},
        "machine": [
            {
                "name": "m",
                "os": "linux",
                "arch": "arm64",
                "vcpus": 2,
                "memory_gib": 4,
                "usd_per_min": 0.002,
                "source": "https://example.com",
                "as_of": dt.date(2026, 12, 1),
            }
        ],
    }
    catalogue = load_catalogue_data(data, source="y.yaml")
    assert catalogue.as_of == "2026-12-01"
    assert catalogue.machines[0].as_of == "2026-12-01"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[catalogue\nname='x'", r"^bad\.toml: not valid TOML: .*line 1"),
        ("[[machine]]\nname='x'", r"missing the \[catalogue\] table"),
        (user_text(head='name = "Bad Name"'), r"name 'Bad Name' must be lower-case"),
        (user_text(head='name = "x"\ncolour = "red"'), r"\[catalogue\]: unknown key 'colour'"),
        (
            user_text(ENTRY.format(name="m", vcpus=0)),
            r"machine\[0\] 'm': `vcpus` must be greater than 0, got 0",
        ),
        (
            user_text(ENTRY.format(name="m", vcpus='"eight"')),
            r"machine\[0\] 'm': `vcpus` must be a number, got 'eight'",
        ),
        (
            user_text(ENTRY.format(name="m", vcpus=2).replace("usd_per_min = 0.01\n", "")),
            r"machine\[0\] 'm': needs a price",
        ),
        (
            user_text(
                ENTRY.format(name="m", vcpus=2).replace('source = "https://example.com/p"\n', "")
            ),
            r"machine\[0\] 'm': missing `source`",
        ),
        (
            user_text(ENTRY.format(name="m", vcpus=2).replace("https://example.com/p", "the web")),
            r"source must be the URL",
        ),
        (
            user_text(ENTRY.format(name="m", vcpus=2).replace("2026-12-01", "Dec 2026")),
            r"`as_of` must be a YYYY-MM-DD date, got 'Dec 2026'",
        ),
        (
            user_text(ENTRY.format(name="m", vcpus=2).replace('os = "linux"', 'os = "beos"')),
            r"`os` must be one of linux, windows, macos, got 'beos'",
        ),
        (
            user_text(ENTRY.format(name="m", vcpus=2), ENTRY.format(name=" M ", vcpus=2)),
            r"'M' of machine 'M' already names machine 'm'",
        ),
        (
            user_text(
                ENTRY.format(name="m", vcpus=2),
                ENTRY.format(name="n", vcpus=2).replace(
                    "usd_per_min = 0.01", "credits_per_min = 5"
                ),
            ),
            r"machine 'n' has only credits_per_min while others have usd_per_min",
        ),
    ],
)
def test_validation_errors_are_precise(text: str, message: str) -> None:
    with pytest.raises(CatalogueError, match=message):
        load_catalogue_text(text, source="bad.toml")


def test_merge_keeps_base_order_and_checks_clashes() -> None:
    base = shipped_catalogues()["circleci"]
    clash = load_catalogue_text(
        user_text(
            ENTRY.format(name="mine", vcpus=2).replace(
                'as_of = "2026-12-01"', 'as_of = "2026-12-01"\naliases = ["large"]'
            )
        ),
        source="clash.toml",
    )
    with pytest.raises(CatalogueError, match="'large' of machine 'mine' already names"):
        merge_catalogues(base, clash)
