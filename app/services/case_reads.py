"""What one test's page and every page's filter menus read: its history and the choices."""

from app.db.repository import filter_choices, load_test_case, load_test_history

__all__ = ["filter_choices", "load_test_case", "load_test_history"]
