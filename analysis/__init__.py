"""The domain: pure functions over pandas frames and dataclasses, one subpackage per capability.

- `rollups/`: where the time goes (totals, shares, percentiles; pipelines' wait and setup).
- `split/`: how to cut a cell's tests into jobs (job model, partitioning, shards).
- `ci/`: a plan in each CI's and runner's own words (selections, snippets, the loop back).
- `sizing/`: the cheapest machine each job fits (catalogues, measured memory and CPU).
- `reduce/`: parametrize explosions cut to covering sets, CI matrices cut to what matters.
- `accuracy/`: did a plan come true, and the calibration it teaches the job model.
- `changes/`: lasting steps in a duration series, found from the series' own noise.
- `compare/`: a pipeline's runs against the base branch's recent runs (the PR summary), their
  cost, and whether the stored split plan still fits.
- `digest/`: a week against the week before from the weekly rollups (the weekly digest).
- `flaky/`: flaky tests found from the data, what they cost, quarantine expiry and release.

Shared by several rooms: `errors` (the one domain error), `durations` (duration text),
`filters` (what a query narrows to) and `estimate` (per-test durations from history). The
frame columns every layer obeys live below the domain, in the `model` package.
"""
