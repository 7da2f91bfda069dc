"""Prometheus metrics: where several processes pool their counts, and the exposition."""
