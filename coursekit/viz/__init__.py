"""Plots (matplotlib) and explorers (ipywidgets). The only place that draws."""


def watch(controls, callback):
    """Call ``callback`` on every value change of ``controls``, each label shown in full
    (ipywidgets cuts a description wider than 90 px: "micro-bat…", "transform…")."""
    for control in controls:
        control.style.description_width = "initial"
        control.observe(callback, names="value")
