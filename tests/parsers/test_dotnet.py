"""NUnit 2/3 XML and TRX parsed natively, like JUnit: outcomes, durations, classes,
theory cases as separate executions; runner `dotnet`, the class as the selection unit."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ingest.model import ReportParseError
from ingest.parsers import PARSERS, parse_report

SAMPLES = Path(__file__).parent / "samples" / "dotnet"


def _parse(name: str) -> dict[str, dict[str, object]]:
    report = parse_report((SAMPLES / name).read_bytes(), filename=name)
    assert report.runner == "dotnet"
    assert report.results["nodeid"].is_unique
    return {row["nodeid"]: row for row in report.results.to_dict("records")}


def test_formats_are_registered() -> None:
    assert {"nunit", "trx"} <= set(PARSERS)


def test_nunit3_outcomes_durations_classes_and_theories() -> None:
    rows = _parse("nunit3-theories.xml")
    cart = "Shop.Tests.CartTests"
    assert {n: r["outcome"] for n, r in rows.items() if n.startswith(cart)} == {
        f"{cart}::AddsItem": "passed",
        f"{cart}::RemovesItem": "failed",
        f"{cart}::Checkout": "error",  # Failed with label Error
        f"{cart}::Discount": "skipped",
        f"{cart}::Totals": "passed",
    }
    assert rows[f"{cart}::AddsItem"]["duration_s"] == pytest.approx(0.25)
    assert rows[f"{cart}::Discount"]["message"] == "pricing rules pending"
    assert "Expected: 0" in str(rows[f"{cart}::RemovesItem"]["message"])
    # Theory cases are separate tests of one method, the class is the unit.
    divide = {n: r for n, r in rows.items() if r["function"] == "Divide"}
    assert set(divide) == {
        "Shop.Tests.MathTests::Divide(12,3)",
        "Shop.Tests.MathTests::Divide(12,2)",
        "Shop.Tests.MathTests::Divide(1,0)",
    }
    assert divide["Shop.Tests.MathTests::Divide(12,3)"]["params"] == "12,3"
    assert divide["Shop.Tests.MathTests::Divide(1,0)"]["outcome"] == "skipped"  # Inconclusive
    # The same case name twice is two executions, numbered in document order.
    assert rows["Shop.Tests.MathTests::Round(2.5d)"]["outcome"] == "passed"
    assert rows["Shop.Tests.MathTests::Round(2.5d) #2"]["outcome"] == "skipped"
    assert {r["file"] for r in rows.values()} == {cart, "Shop.Tests.MathTests"}
    assert {r["suite"] for r in rows.values()} == {"Shop.Tests.dll"}
    assert sum(float(r["duration_s"]) for r in rows.values()) == pytest.approx(1.07)  # type: ignore[arg-type]


def test_nunit2_outcomes_and_classes_from_full_names() -> None:
    rows = _parse("nunit2.xml")
    parser = "Legacy.Tests.ParserTests"
    assert {n: r["outcome"] for n, r in rows.items()} == {
        f"{parser}::ParsesEmpty": "passed",
        f"{parser}::ParsesLarge": "failed",
        f"{parser}::Crashes": "error",
        f"{parser}::Slow": "skipped",
        f'{parser}::Pads("a.b",2)': "passed",
        f'{parser}::Pads("c",0)': "passed",
    }
    assert rows[f"{parser}::ParsesLarge"]["duration_s"] == pytest.approx(1.5)  # "1,5"
    assert rows[f'{parser}::Pads("a.b",2)']["function"] == "Pads"
    assert {r["file"] for r in rows.values()} == {parser}


def test_trx_outcomes_durations_classes_and_data_rows_once() -> None:
    rows = _parse("vstest.trx")
    orders = "Api.Tests.OrdersTests"
    assert {n: (r["outcome"], r["duration_s"]) for n, r in rows.items()} == {
        f"{orders}::Creates": ("passed", 1.25),
        f"{orders}::Rejects": ("failed", 0.5),
        f"{orders}::Waits": ("error", 60.0),  # Timeout
        f"{orders}::Later": ("skipped", 0.0),
        "Api.Tests.PriceTests::Rounds(value: 2.5)": ("passed", 0.03),
        "Api.Tests.PriceTests::Rounds(value: 3.5)": ("passed", 0.02),
        # MSTest data rows, not their parent: 0.3 s counted once.
        "Api.Tests.MathTests::Sums (1,2,3)": ("passed", 0.1),
        "Api.Tests.MathTests::Sums (2,2,5)": ("failed", 0.2),
    }
    assert "Expected 400" in str(rows[f"{orders}::Rejects"]["message"])
    assert rows["Api.Tests.PriceTests::Rounds(value: 2.5)"]["function"] == "Rounds"
    assert rows["Api.Tests.MathTests::Sums (1,2,3)"]["file"] == "Api.Tests.MathTests"


def test_gzipped_and_forced_formats() -> None:
    data = (SAMPLES / "vstest.trx").read_bytes()
    assert len(parse_report(gzip.compress(data)).results) == 8
    assert len(parse_report(data, format="trx").results) == 8
    nunit = (SAMPLES / "nunit2.xml").read_bytes()
    assert len(parse_report(nunit, format="nunit").results) == 6


@pytest.mark.parametrize(
    ("data", "fmt", "code"),
    [
        (b'<!DOCTYPE x [<!ENTITY a "b">]><test-run/>', "nunit", "xml-dtd-forbidden"),
        (b"<test-run><test-case name='a'", "nunit", "xml-truncated"),
        (b"<assemblies/>", "nunit", "not-junit"),
        (b"<TestRun><Results>&ext;</Results></TestRun>", "auto", "xml-entity-forbidden"),
        (b"<testsuite/>", "trx", "not-junit"),
    ],
)
def test_hostile_or_foreign_xml_is_refused_with_a_code(data: bytes, fmt: str, code: str) -> None:
    with pytest.raises(ReportParseError) as caught:
        parse_report(data, format=fmt, filename="r.xml")
    assert caught.value.code == code
