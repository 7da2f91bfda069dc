"""Text from reports made safe for plotly.

plotly.js draws titles, axis ticks, legends, hover and bar text through its own small HTML
renderer (`<b>`, `<br>`, `<a href>`...): a test, job or label name holding markup would be
rendered as markup (a live link in a hover box). Every data-derived string that reaches a
figure goes through here; plotly turns the entities back into the literal characters.
"""

from __future__ import annotations

import pandas as pd

# Only these three: plotly decodes &amp; &lt; &gt; (and numeric entities) but not &quot;.
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def plot_text(value: object) -> str:
    """One string as plotly shows it literally."""
    return str(value).translate(_ESCAPES)


def plot_texts(values: pd.Series) -> pd.Series:
    """A column of strings as plotly shows them literally (None/NaN become "None"/"nan")."""
    uniques = values.astype(str)
    # Names repeat (a job per pipeline): translate each distinct one once.
    mapping = {u: plot_text(u) for u in pd.unique(uniques)}
    return uniques.map(mapping)


# Tick labels longer than this widen the axis margin (automargin) until the plot area is a
# sliver: 300-character paths and .NET class names. Hover text keeps the full name.
TICK_CHARS = 20
# Charts two a row (the share charts) have half the room.
NARROW_TICK_CHARS = 16
# Slanted labels under vertical bars take mostly height: a little more room (the first one
# still reaches left into the margin).
SLANTED_TICK_CHARS = 24


def short_name(value: object, *, limit: int = TICK_CHARS) -> str:
    """A name cut to `limit` characters by dropping its middle (start and distinctive end stay)."""
    text = str(value)
    if len(text) <= limit:
        return text
    head = limit // 4
    return text[:head] + "…" + text[-(limit - head - 1) :]


def tick_texts(values: pd.Series, *, limit: int = TICK_CHARS) -> pd.Series:
    """A column of names as short, distinct axis labels that plotly shows literally.

    Distinct because plotly merges the bars of equal category labels.
    """
    seen: dict[str, int] = {}
    labels = []
    for value in values.astype(str):
        label = short_name(value, limit=limit)
        count = seen.get(label, 0)
        seen[label] = count + 1
        labels.append(label if count == 0 else f"{label} ({count + 1})")
    return pd.Series([plot_text(label) for label in labels], index=values.index)
