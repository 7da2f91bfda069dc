"""Plotly figure builders: pure functions from analysis frames to figures the pages embed."""
