"""Longest accepted text of each upload field: the upload form refuses longer, and the
filters that match stored values are bounded by the same figures."""

# Longest accepted value of each text field, in characters.
FIELD_MAX_CHARS: dict[str, int] = {
    "job": 200,
    "branch": 200,
    "commit": 100,
    "pipeline": 200,
    "machine": 100,
    "label key": 100,
    "label value": 500,
    "idempotency_key": 200,
    "pull_request": 50,
    "runner_os": 50,
    "plan_id": 64,
}
