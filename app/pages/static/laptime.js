// Draws every figure of a page from its inert JSON (<script type="application/json">), so the
// pages need no inline script and the Content-Security-Policy can forbid it.
"use strict";

const PLOT_CONFIG = { displaylogo: false, responsive: true };

function drawFigures() {
  for (const data of document.querySelectorAll("script.figure-data")) {
    const target = document.getElementById(data.dataset.figure);
    if (!target) continue;
    const figure = JSON.parse(data.textContent);
    Plotly.newPlot(target, figure.data, figure.layout || {}, PLOT_CONFIG);
  }
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", drawFigures);
} else {
  drawFigures();
}

// A chart drawn while the page was still arriving sized itself to a layout that has since
// changed (grid columns fill in as cards arrive): fit every chart to its card once loaded.
window.addEventListener("load", () => {
  for (const el of document.querySelectorAll(".js-plotly-plot")) Plotly.Plots.resize(el);
});
