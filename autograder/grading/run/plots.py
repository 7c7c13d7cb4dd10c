"""The class at a glance: ``score_histogram.png`` and ``pass_rates.png``.

:mod:`.run.reports` computes what they show (:func:`~.run.reports.cell_rates`); the labels here
are assignment and cell ids of the course, never a submission's text.
"""
from __future__ import annotations

from pathlib import Path

from autograder.grading.layout import OutputLayout
from autograder.grading.run.results import NotebookGrade


def write_plots(grades: list[NotebookGrade], rates: dict[tuple[str, str], tuple[int, int, int, bool]],
                layout: OutputLayout) -> list[Path]:
    """Write the two plots of :attr:`~.layout.OutputLayout.plots` and return their paths.

    ``score_histogram.png``: the share of its points each graded notebook got, the points of
    cells that wait for manual grading left out of both sides. ``pass_rates.png``: one bar per
    graded cell in the order of the notebooks (``rates``, as :func:`~.run.reports.cell_rates`
    gives them), its length the share of the notebooks with a score for that cell that got full
    points, labelled with how many notebooks it covers ("31/40") and how many wait for manual
    grading; cells graded by hand in grey."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    histogram, pass_rates_png = layout.plots
    shares, waiting = [], 0
    for g in grades:
        pending = sum(g.scores[c][1] for c in g.pending if c in g.scores)
        if g.executed and g.max_score - pending > 0:
            shares.append(100 * g.score / (g.max_score - pending))
            waiting += bool(pending)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(shares, bins=10, range=(0, 100), color="#4c72b0", edgecolor="white")
    note = f"\n{waiting} with cells that wait for manual grading: scored on the rest" \
        if waiting else ""
    ax.set(xlabel="score (% of the notebook's points)", ylabel="notebooks")
    ax.set_title(f"Score distribution ({len(shares)} graded notebooks){note}", fontsize=10)
    fig.tight_layout()
    fig.savefig(histogram, dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 0.3 * len(rates) + 1.2))
    labels = [f"{a.split('_')[0]} {c.removeprefix('test_')}" for a, c in rates]
    values = [100 * passed / scored if scored else 0 for passed, scored, _, _ in rates.values()]
    bars = ax.barh(range(len(rates)), values,
                   color=["#999999" if by_hand else "#55a868" for *_, by_hand in rates.values()])
    for bar, (passed, scored, pending, by_hand) in zip(bars, rates.values()):
        text = f"{passed}/{scored}" + (" by hand" if by_hand else "") + \
            (f", {pending} need{'s' if pending == 1 else ''} manual grading" if pending else "")
        ax.text(min(bar.get_width(), 100) + 1, bar.get_y() + bar.get_height() / 2, text,
                va="center", fontsize=8)
    ax.set_yticks(range(len(rates)), labels)
    ax.invert_yaxis()
    ax.set(xlim=(0, 135), xticks=range(0, 101, 20),
           xlabel="notebooks with full points (%; grey: graded by hand)",
           title="Pass rate per exercise")
    fig.tight_layout()
    fig.savefig(pass_rates_png, dpi=120)
    plt.close(fig)
    return [histogram, pass_rates_png]
