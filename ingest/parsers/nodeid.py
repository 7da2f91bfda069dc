"""Rebuild pytest nodeids from what pytest's junitxml plugin wrote.

pytest writes `classname` as the nodeid's path with "/" turned into "." and ".py" dropped,
followed by the enclosing classes, and `name` as the function plus its "[params]" id.
xunit1 adds `file` (the path), so the module/class boundary is known; xunit2 does not, so
the first capitalised segment after the first is taken to start the classes (pytest's
default `python_classes = Test*`; packages and modules are lower case by convention).

The dots are ambiguous: `classname` cannot tell the directory `python3.11` from `python3/11`.
A path is never rebuilt by replacing every dot: a segment starting with a digit (no module or
package name can) rejoins the one before it (`venv/lib/python3.11/...`), and an empty one
starts a dot-name (`.venv`). Other dotted directory names (`foo.bar/`) stay a guess; the
`file` attribute (xunit1) settles them, and so do collected nodeids (`laptime shard
--collected` matches by this dotted form).
"""

from __future__ import annotations

from functools import lru_cache

PYTEST_SUITE_NAME = "pytest"


@lru_cache(maxsize=65536)
def split_pytest_classname(classname: str, file: str | None) -> tuple[str, str]:
    """(file path, "::"-joined classes) for a pytest classname; classes may be ""."""
    segments = classname.split(".") if classname else []
    if file:
        path = file.replace("\\", "/")
        module = path[:-3] if path.endswith(".py") else path
        dotted = module.replace("/", ".")
        if classname == dotted:
            return path, ""
        if classname.startswith(dotted + "."):
            return path, "::".join(classname[len(dotted) + 1 :].split("."))
        # The file is not the classname's module: an absolute path ends with the module's
        # relative path (use that, as pytest's nodeid does); otherwise keep the file as is.
        start = _class_start(segments)
        relative = module_path(segments[:start])
        if start and path.endswith("/" + relative):
            path = relative
        return path, "::".join(segments[start:])
    start = _class_start(segments)
    module_parts = segments[:start]
    if not module_parts:
        return "", "::".join(segments)
    return module_path(module_parts), "::".join(segments[start:])


def module_path(segments: list[str]) -> str:
    """The file of a dotted module's segments (see the module docstring for the ambiguity)."""
    parts: list[str] = []
    dot_name = False
    for segment in segments:
        if not segment:
            dot_name = True  # `.venv.lib` -> ["", "venv", "lib"]
            continue
        if dot_name:
            parts.append("." + segment)
        elif parts and segment[:1].isdigit():
            parts[-1] += "." + segment  # `python3.11` -> ["python3", "11"]
        else:
            parts.append(segment)
        dot_name = False
    return "/".join(parts) + ".py"


def _class_start(segments: list[str]) -> int:
    """Index of the first class segment: the first capitalised one after the first."""
    for i in range(1, len(segments)):
        if segments[i][:1].isupper():
            return i
    return len(segments)


def split_params(name: str) -> tuple[str, str | None]:
    """("test_y", "p1-p2") for "test_y[p1-p2]"; params None without a bracket id."""
    i = name.find("[")
    if i <= 0 or not name.endswith("]"):
        return name, None
    return name[:i], name[i + 1 : -1]


def pytest_nodeid(path: str, classes: str, name: str) -> str:
    """Join a path, its classes and the test name into a pytest nodeid."""
    if not path:
        return f"{classes}::{name}" if classes else name
    if classes:
        return f"{path}::{classes}::{name}"
    return f"{path}::{name}"
