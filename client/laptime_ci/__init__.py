"""laptime's CI client: pytest plugin, report uploader and shard client (stdlib only)."""

__version__ = "0.1.0"
