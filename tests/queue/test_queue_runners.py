"""`laptime-ci queue run` with a real runner other than pytest: two Go nodes pull batches, one
`go test` process each, in the selection syntax laptime writes for Go; every test runs once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from sqlalchemy import Engine

from tests.conftest import LiveServer, make_project
from tests.queue.nodes import PATHS
from tests.tools import require
from tests.uploads import upload_all

MODULE = "example.com/shop"
# Names that are prefixes of others catch an unanchored `-run` (it would run both).
TESTS = {
    "cart": ["TestAdd", "TestAddAll", "TestRemove", "TestRemoveAll", "TestTotal"],
    "price": ["TestRound", "TestTax", "TestSum"],
    "user": ["TestLogin", "TestLogout"],
    "order": ["TestPlace"],
}
SECONDS = {"cart": 10.0, "price": 6.0, "user": 3.0, "order": 1.0}


def go_project(root: Path) -> tuple[bytes, list[str]]:
    """Packages whose tests log `pkg::Test` to $RAN_LOG; their history and nodeids."""
    (root / "go.mod").write_text(f"module {MODULE}\n\ngo 1.19\n")
    cases, nodeids = [], []
    suites = []
    for package, names in TESTS.items():
        (root / package).mkdir()
        funcs = "".join(
            f'func {name}(t *testing.T) {{ record("{MODULE}/{package}::{name}") }}\n'
            for name in names
        )
        (root / package / f"{package}_test.go").write_text(
            f'package {package}\n\nimport (\n\t"os"\n\t"testing"\n)\n\n'
            "func record(id string) {\n"
            '\tf, _ := os.OpenFile(os.Getenv("RAN_LOG"),'
            " os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)\n"
            '\tf.WriteString(id + " " + os.Getenv("NODE") + "\\n")\n\tf.Close()\n}\n\n' + funcs
        )
        cases = [
            f'<testcase name="{n}" classname="{MODULE}/{package}" time="{SECONDS[package]}">'
            "</testcase>"
            for n in names
        ]
        nodeids += [f"{MODULE}/{package}::{n}" for n in names]
        suites.append(
            f'<testsuite name="{MODULE}/{package}" tests="{len(cases)}"><properties>'
            '<property name="go.version" value="go1.19.8"></property></properties>'
            f"{''.join(cases)}</testsuite>"
        )
    return f"<testsuites>{''.join(suites)}</testsuites>".encode(), sorted(nodeids)


def test_two_go_nodes_run_each_test_once_one_process_per_batch(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    require("go", "go", "Debian: apt-get install golang-go")
    project = make_project(engine)
    root = tmp_path / "shop"
    root.mkdir()
    history, nodeids = go_project(root)
    upload_all(live_server, project.upload_token, [("go-junit.xml", history, {"pipeline": "h"})])
    collected = tmp_path / "collected.txt"
    collected.write_text("\n".join(nodeids) + "\n")
    log = tmp_path / "ran.log"
    gocache = tmp_path / "go"
    procs = []
    for node in (1, 2):
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LAPTIME_", "CI"))},
            "PYTHONPATH": PATHS,
            "LAPTIME_URL": live_server.url,
            "LAPTIME_TOKEN": project.upload_token,
            "LAPTIME_PROJECT": project.slug,
            "LAPTIME_PIPELINE": "go-1",
            "NODE": str(node),
            "RAN_LOG": str(log),
            "GOCACHE": str(gocache / "cache"),
            "GOPATH": str(gocache / "path"),
            "GOPROXY": "off",
            "GOFLAGS": "-mod=mod",
            "GOTOOLCHAIN": "local",
        }
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "from laptime_ci.cli import run; run()",
                    "queue",
                    "run",
                    f"--node={node}/2",
                    "--runner=go",
                    f"--collected={collected}",
                    "--start-cost-s=0.1",
                ],
                cwd=root,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outputs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
        outputs.append(out)
    ran = Counter(line.split(" ")[0] for line in log.read_text().splitlines())
    assert ran == dict.fromkeys(nodeids, 1)
    batches = sum(out.count("batch of") for out in outputs)
    assert batches >= 2  # one `go test` process per batch
    assert any("-run" in out or "go test" in out for out in outputs)
