"""`laptime-ci run -- pytest ...`: the test process timed from outside, start to exit.

After its session a pytest process still writes reports, shuts the interpreter down and stops
libraries' worker pools (atexit handlers, joblib's loky): 0.5-1.2 s per job measured on a
scientific-Python suite, which the plugin, living inside the process, cannot see. Under the
wrapper the plugin hands its report over (HANDOFF_ENV names the file) instead of uploading it;
the wrapper adds `session.exit_s`, the seconds from the session's end to the process's exit,
then writes the report and uploads it as the plugin would have.
"""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable

HANDOFF_ENV = "LAPTIME_RUN_HANDOFF"
Echo = Callable[[str, bool], None]


def hand_off(
    handoff: Path,
    document: dict[str, Any],
    *,
    ended_at: float,
    path: Path | None,
    upload: bool,
    labels: Mapping[str, str],
    plan_id: str | None,
) -> tuple[str, bool]:
    """The plugin's side: leave the report and what its upload needs for the wrapper."""
    payload = {
        "ended_at": ended_at,
        "document": document,
        "path": None if path is None else str(path),
        "upload": upload,
        "labels": dict(labels),
        "plan_id": plan_id,
    }
    try:
        handoff.write_text(json.dumps(payload, separators=(",", ":")))
    except OSError as exc:
        return f"cannot hand the report to laptime-ci run: {exc}", True
    return "report handed to laptime-ci run (exit tail added at exit)", False


def exit_tail_s(ended_at: float, exited_at: float) -> float:
    """Seconds from the session's end to the process's exit (never negative: clock steps)."""
    return round(max(0.0, exited_at - ended_at), 3)


def finish_handoff(handoff: Path, *, exited_at: float, echo: Echo) -> float | None:
    """The wrapper's side: add the exit tail to the handed-over report, write it where the
    plugin would have and upload it when asked. Returns the exit tail (None: no report)."""
    try:
        payload = json.loads(handoff.read_text())
        ended_at = float(payload["ended_at"])
        document: dict[str, Any] = payload["document"]
    except FileNotFoundError:
        echo(
            "laptime-ci run: the command left no laptime report to complete (is it pytest "
            "with --laptime-report or --laptime-upload?)",
            True,
        )
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        echo(f"laptime-ci run: unreadable report hand-over: {exc}", True)
        return None
    exit_s = exit_tail_s(ended_at, exited_at)
    document["session"]["exit_s"] = exit_s
    data = json.dumps(document, separators=(",", ":")).encode()
    echo(f"laptime-ci run: exit tail {exit_s:.3f} s (session end to process exit)", False)
    path = Path(payload["path"]) if payload.get("path") else None
    if path is not None:
        try:
            path.write_bytes(data)
        except OSError as exc:
            echo(f"laptime-ci run: cannot write {path}: {exc}", True)
    if payload.get("upload"):
        from laptime_ci.report_upload import upload_document

        line, warning = upload_document(
            document,
            data,
            path,
            labels=dict(payload.get("labels") or {}),
            plan_id=payload.get("plan_id"),
        )
        echo(f"laptime-ci run: {line}", warning)
    return exit_s


def run_wrapped(command: Sequence[str], *, env: Mapping[str, str], echo: Echo) -> int:
    """Run `command`, wait for its exit and complete its report; the command's exit status."""
    if not command:
        echo("laptime-ci run: no command (laptime-ci run -- pytest ...)", True)
        return 2
    with tempfile.TemporaryDirectory(prefix="laptime-run-") as tmp:
        handoff = Path(tmp) / "report.json"
        child_env = {**env, HANDOFF_ENV: str(handoff)}
        try:
            child = subprocess.Popen(list(command), env=child_env)
        except OSError as exc:
            echo(f"laptime-ci run: cannot start {command[0]}: {exc}", True)
            return 127
        # The CI's cancel reaches the wrapper: pass it on and still wait for the exit.
        previous = signal.signal(signal.SIGTERM, lambda signum, _frame: child.send_signal(signum))
        try:
            while True:
                try:
                    code = child.wait()
                    break
                except KeyboardInterrupt:  # the child got the terminal's SIGINT too
                    continue
        finally:
            signal.signal(signal.SIGTERM, previous)
        exited_at = time.time()
        finish_handoff(handoff, exited_at=exited_at, echo=echo)
    return code if code >= 0 else 128 - code
