"""Read /metrics as numbers: one scrape, parsed by prometheus_client's own parser."""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Samples:
    """Every sample of one scrape: (sample name, sorted labels) -> value."""

    values: dict[tuple[str, tuple[tuple[str, str], ...]], float]

    def get(self, name: str, **labels: str) -> float:
        """The sample's value; 0 when the series does not exist (yet)."""
        return self.values.get((name, tuple(sorted(labels.items()))), 0.0)

    def total(self, name: str) -> float:
        """The sum over every series of `name`."""
        return sum(v for (n, _), v in self.values.items() if n == name)

    def labels_of(self, name: str, label: str) -> set[str]:
        """Every value `label` takes in the series of `name`."""
        return {dict(labels)[label] for (n, labels), _ in self.values.items() if n == name}

    def minus(self, before: Samples) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Series that moved since `before`, by how much (buckets included)."""
        moved = {k: v - before.values.get(k, 0.0) for k, v in self.values.items()}
        return {k: d for k, d in moved.items() if d != 0}


def scrape(base_url: str, token: str | None = None) -> Samples:
    """GET /metrics and parse it."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(f"{base_url}/metrics", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    values = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return Samples(values)


def scrape_when(base_url: str, ready: object, timeout_s: float = 60, what: str = "") -> Samples:
    """Scrape until `ready(samples)` holds (other work draining), failing after `timeout_s`."""
    assert callable(ready)
    deadline = time.monotonic() + timeout_s
    while True:
        samples = scrape(base_url)
        if ready(samples):
            return samples
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s} s: {what}")
        time.sleep(0.1)  # polling other processes' queue, not timing anything
