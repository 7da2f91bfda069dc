"""Compare a pipeline's runs with the base branch's recent runs of the same cell."""
