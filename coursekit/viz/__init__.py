"""Plots (matplotlib) and explorers (ipywidgets). The only place that draws."""
