"""What got slower, and since which run: lasting steps in duration series (docs/changes.md).

Entry points: `detect_changes` (a whole series), `update_state` (one series, only its new runs),
`SeriesTable.push` (many series, one new run each, vectorised). Each returns `Change`s.
"""

from analysis.changes.change import Change, changes_frame
from analysis.changes.detect import SeriesState, detect_changes, empty_state, update_state
from analysis.changes.points import POINT_COLUMNS, SeriesPoints, series_points
from analysis.changes.settings import DEFAULT_SETTINGS, DetectionSettings

__all__ = [
    "DEFAULT_SETTINGS",
    "POINT_COLUMNS",
    "Change",
    "DetectionSettings",
    "SeriesPoints",
    "SeriesState",
    "changes_frame",
    "detect_changes",
    "empty_state",
    "series_points",
    "update_state",
]
