"""What a job of a stored plan tells the CI client so that its run is matched to the plan.

The client (the pytest plugin's upload and `laptime-ci upload`) adds the comma-separated
`key=value` pairs of LAPTIME_LABELS to the run's labels; the server reads `plan=<id>` as the
plan the run executed and `shard=I/N` as its job in that plan (analysis/accuracy/plan_accuracy.py).
"""

from __future__ import annotations

import re

from analysis.errors import AnswerError

LABELS_VAR = "LAPTIME_LABELS"
# A plan id is a short hex hash (analysis/accuracy/plan_record.py); anything else could end a YAML
# scalar, a shell word or a label, so it is refused rather than escaped three ways.
_PLAN_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")
# The first line of a snippet made without a plan id (`laptime plan`, offline).
UNSTORED_NOTE = (
    "# laptime: no server stored this plan, so the accuracy view cannot match these jobs'\n"
    "# runs to it. Take the snippet from the server's recommendations (API or page): each\n"
    "# job then names its plan and shard in LAPTIME_LABELS.\n"
)
# The first line of a server's snippet for a plan it has not stored (a read stores nothing,
# so reads can be cached and repeated) whose jobs cannot ask for their shard (every runner
# but pytest).
UNTRACKED_NOTE = (
    "# laptime: this plan is not stored yet, so the accuracy view cannot match these jobs'\n"
    '# runs to it. Press "Track this plan" on the recommendations page (or POST the same\n'
    "# question to .../recommendations/split): each job then names its plan and shard.\n"
)


def plan_labels(plan_id: str, shard: str) -> str:
    """LAPTIME_LABELS of one job: `plan=<id>,shard=<shard>` (`shard` is `I/N` or the CI's
    expression for it); raises ValueError for an id that is not a plain token."""
    if not _PLAN_ID.fullmatch(plan_id):
        raise AnswerError(f"plan id {plan_id!r} is not 1-64 letters, digits, '-' or '_'")
    return f"plan={plan_id},shard={shard}"
