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
