"""The client's default idempotency key tells matrix cells apart."""

from __future__ import annotations

from laptime_ci.upload import UploadMetadata, default_idempotency_key, metadata_from_env

FILES = [("junit.xml", b"<testsuite/>")]


def test_cells_with_identical_reports_get_different_keys() -> None:
    def key(labels: dict[str, str], machine: str | None = None) -> str:
        metadata = UploadMetadata(pipeline="7", job="tests", labels=labels, machine=machine)
        return default_idempotency_key(FILES, metadata)

    linux = key(labels={"os": "linux"})
    assert linux == key(labels={"os": "linux"})  # a retry of the same upload
    assert linux != key(labels={"os": "macos"})
    assert linux != key(labels={"os": "linux"}, machine="large")
    # Not confusable by moving text between key and value.
    assert key(labels={"a": "b=c"}) != key(labels={"a=b": "c"})


def test_env_labels_are_trimmed_per_item_but_otherwise_exact() -> None:
    metadata = metadata_from_env({"LAPTIME_LABELS": " os=linux ,expr=a=b, gpu= "})
    assert metadata.labels == {"os": "linux", "expr": "a=b", "gpu": ""}
