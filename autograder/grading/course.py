"""Where the course lives: its root, its assignments, what its source notebooks hold."""
from __future__ import annotations

import json
from pathlib import Path

from autograder.grading.defaults import DEMO_TAG, SOURCE_DIR

REPO_ROOT = Path(__file__).resolve().parents[2]


def assignments(root: Path = REPO_ROOT) -> list[str]:
    """The assignment ids: the folders of ``solutions/`` holding a notebook, sorted."""
    return sorted(p.name for p in (root / SOURCE_DIR).iterdir()
                  if p.is_dir() and any(p.glob("*.ipynb")))


def demo_cell_hashes(notebooks) -> list[str]:
    """The sha256 (hex) of the source of every code cell tagged :data:`DEMO_TAG` in the given
    source notebooks (paths). A submitted cell whose source hashes to one of these, and which is
    neither graded nor an answer cell, is the author's demonstration, unchanged: it is skipped
    when grading (:class:`~.preprocessors.execute.GradingExecute`). A demo cell a student edited runs."""
    import hashlib
    import json

    hashes = set()
    for path in notebooks:
        for cell in json.loads(open(path, encoding="utf-8").read())["cells"]:
            if cell["cell_type"] == "code" and DEMO_TAG in cell["metadata"].get("tags", []):
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                hashes.add(hashlib.sha256(source.encode()).hexdigest())
    return sorted(hashes)


def graded_cells_in_order(release_dir: Path) -> dict[str, list[str]]:
    """Assignment id -> the ``grade_id`` of each graded cell, in notebook order (notebooks by
    name), from the release folder ``<release_dir>/<assignment>/<notebook>.ipynb``: the order in
    which reports and plots list exercises. A notebook that cannot be read is left out."""
    order: dict[str, list[str]] = {}
    for path in sorted(Path(release_dir).glob("*/*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        order.setdefault(path.parent.name, []).extend(
            meta["grade_id"] for c in cells if isinstance(c, dict)
            for meta in [c.get("metadata", {}).get("nbgrader", {})]
            if isinstance(meta, dict) and meta.get("grade") and isinstance(meta.get("grade_id"), str))
    return order
