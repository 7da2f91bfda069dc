"""When a failed delivery is tried again: exponential backoff, capped, with a bounded count."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """How deliveries are tried: attempts, backoff, and the bounds of one attempt."""

    max_attempts: int = 8
    first_delay_s: float = 30.0
    max_delay_s: float = 6 * 3600.0
    timeout_s: float = 10.0  # connect, send, and the whole response, each attempt
    max_response_bytes: int = 64 * 1024  # read of the receiver's answer, for the record
    # Private, loopback, link-local... receivers (notify/addresses.py): refused unless allowed.
    allow_private: bool = False

    @property
    def lease_s(self) -> float:
        """How long a claimed delivery is its sender's: past it, another process may take it
        (the sender died mid-attempt). Longer than any attempt can last."""
        return 4 * self.timeout_s + 1.0

    def delay_s(self, attempts: int) -> float:
        """Seconds before the next try after `attempts` failed ones: first, 2x, 4x... capped."""
        return float(min(self.first_delay_s * 2 ** max(attempts - 1, 0), self.max_delay_s))

    def gives_up(self, attempts: int) -> bool:
        """True when no further try is made after `attempts` failed ones."""
        return attempts >= self.max_attempts
