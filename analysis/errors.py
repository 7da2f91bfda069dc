"""The one error the domain raises when a well-formed question cannot be answered.

Edges map `AnswerError` (and only it) to a 422 with its message; any other exception is a
fault of ours, answered as a 500 `internal-error` with a log line, so no library's internal
message (pandas' "Length of values ...") ever reaches a user as if it were advice.
"""

from __future__ import annotations

from typing import ClassVar


class AnswerError(ValueError):
    """The question is well-formed but the data or the options cannot answer it; the message
    says why in the user's words. `status` and `code` are its HTTP answer, mapped once by the
    app (a subclass that means "not found" says 404)."""

    status: ClassVar[int] = 422
    code: ClassVar[str] = "request-unprocessable"
