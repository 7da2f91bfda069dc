"""A plan in the CI's and each runner's own words: test selections, CI snippets, the loop back.

Entry points: `ci.snippets.runner_snippets` (GitHub Actions, GitLab CI, CircleCI per runner),
`ci.config.marker_split` (pytest markers and arguments per job),
`ci.runner_commands.select_jobs` (each job's tests as its runner selects them) and
`ci.pytest_selection.job_args` (pytest arguments that collect exactly a job's tests).
"""
