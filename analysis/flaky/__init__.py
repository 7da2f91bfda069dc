"""Flaky tests found from the data and what they cost (docs/flaky.md).

- `detect`: which results were flaky (passed on retry in a job; or failed where the same
  commit and cell also passed) and each test's rate, first and last seen, branches, cells.
- `cost`: the time flakes cost (in-job reruns, whole-job retries, pipeline re-runs) as
  machine time, money and developer wait, per test, file, job and week.
- `quarantine`: which quarantine entries expire or are released by stable runs.
"""
