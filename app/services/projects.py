"""Project and token operations the edges may call (the admin API, the pages, sign-in).

Each is the database layer's own operation: there is nothing to add between, and the edges
reach it here so that neither edge imports the database layer.
"""

from app.db.projects import issue_token, list_projects, list_tokens, revoke_token, set_catalogue

__all__ = ["issue_token", "list_projects", "list_tokens", "revoke_token", "set_catalogue"]
