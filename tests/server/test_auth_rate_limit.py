"""Failed authentication is rate-limited per client address, with bounded memory (issue 14)."""

from __future__ import annotations

import threading

import httpx

from app.api.auth_limit import FailedAuthLimiter
from tests.conftest import LiveServer, ProjectFixture
from tests.pages.conftest import sign_in_form


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_budget_runs_out_and_refills() -> None:
    clock = Clock()
    limiter = FailedAuthLimiter(failures=5, window_s=60.0, clock=clock)
    for _ in range(5):
        assert limiter.retry_after_s("10.0.0.1") is None
        limiter.record_failure("10.0.0.1")
    assert limiter.retry_after_s("10.0.0.1") == 12  # one failure comes back every 12 s
    assert limiter.retry_after_s("10.0.0.2") is None  # other addresses are not affected
    clock.now += 12
    assert limiter.retry_after_s("10.0.0.1") is None


def test_memory_is_bounded_by_evicting_the_oldest_address() -> None:
    limiter = FailedAuthLimiter(failures=1, window_s=60.0, max_clients=100, clock=Clock())
    for i in range(1000):
        limiter.record_failure(f"10.0.{i // 256}.{i % 256}")
    assert len(limiter) == 100
    assert limiter.retry_after_s("10.0.3.231") is not None  # the latest is kept
    assert limiter.retry_after_s("10.0.0.0") is None  # the oldest was evicted


def test_concurrent_failures_are_all_counted() -> None:
    limiter = FailedAuthLimiter(failures=400, window_s=1e9, clock=Clock())

    def fail() -> None:
        for _ in range(50):
            limiter.record_failure("10.0.0.1")

    threads = [threading.Thread(target=fail) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    # 400 failures took the whole budget, exactly: a lost update would leave one.
    assert limiter.retry_after_s("10.0.0.1") is not None
    limiter_one_short = FailedAuthLimiter(failures=401, window_s=1e9, clock=Clock())
    for _ in range(400):
        limiter_one_short.record_failure("10.0.0.1")
    assert limiter_one_short.retry_after_s("10.0.0.1") is None


def test_bad_tokens_from_one_address_get_429_and_good_tokens_still_work(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    url = f"{live_server.url}/api/v1/projects/{project.slug}/jobs"
    # Loopback has every 127.x address: this client is another machine to the server.
    attacker = httpx.Client(
        base_url=live_server.url,
        transport=httpx.HTTPTransport(local_address="127.0.0.2"),
        timeout=30,
    )
    with attacker:
        statuses = [
            attacker.get(url, headers={"Authorization": f"Bearer lt_read_guess{i}"}).status_code
            for i in range(31)
        ]
        assert statuses[:30] == [401] * 30  # the default budget: 30 a minute
        assert statuses[30] == 429
        limited = attacker.get(url, headers={"Authorization": "Bearer lt_read_guess"})
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        assert "too many failed" in limited.json()["detail"]
        # Once limited, the address cannot try even a right guess.
        right = attacker.get(url, headers={"Authorization": f"Bearer {project.read_token}"})
        assert right.status_code == 429
        # The sign-in form is limited as well.
        form = sign_in_form(attacker)
        signin = attacker.post("/signin", data={**form, "token": project.read_token})
        assert signin.status_code == 429
        assert "retry-after" in signin.headers
    good = httpx.get(url, headers={"Authorization": f"Bearer {project.read_token}"})
    assert good.status_code == 200
