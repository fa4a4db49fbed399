"""PNG plots of ``ocb report``'s per-day tables (matplotlib, headless; the plot extra)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ocb_events.errors import InputError

if TYPE_CHECKING:
    from replay.report import HistoryReport

PLOTS = (
    ("queries_per_day", ("queries", "mean_fired", "mean_context_chars")),
    ("tiers_per_day", ("reflex", "habitual", "dormant", "inhibitory")),
)
"""Each plotted table, and its columns (one panel each) against the day."""


def check_plotting(directory: Path) -> None:
    """Refuse ``--plot`` before any work when matplotlib is missing or ``directory``
    is a file.

    Raises:
        InputError: matplotlib is not installed, or ``directory`` is no directory.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        from ocb.brain import Brain

        raise InputError(
            "--plot needs matplotlib, which is not installed",
            f"{Brain.install_command('plot')}, or leave out --plot",
        ) from None
    if directory.exists() and not directory.is_dir():
        raise InputError(f"--plot {directory} is not a directory", "pass a directory path")


def write_plots(r: HistoryReport, directory: Path) -> list[Path]:
    """PNG plots of the per-day tables that have rows; the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    tables = {t.name: t for t in r.tables}
    written = []
    for name, series in PLOTS:
        t = tables[name]
        if not t.rows:
            continue
        days = [row[0] for row in t.rows]
        fig, axes = plt.subplots(len(series), 1, figsize=(8, 2.2 * len(series)), sharex=True)
        for ax, col in zip(axes, series, strict=True):
            i = t.columns.index(col)
            ax.plot(days, [row[i] for row in t.rows], marker=".")
            ax.set_ylabel(col)
        axes[0].set_title(t.title)
        fig.autofmt_xdate()
        out = directory / f"{name}.png"
        fig.savefig(out, dpi=100)
        plt.close(fig)
        written.append(out)
    return written
