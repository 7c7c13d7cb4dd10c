"""Keep nbgrader from reading a student's text as its own markup (G16).

nbgrader finds its regions by their delimiters anywhere in a line of any cell: feedback
(``ClearHiddenTests``, on every cell) fails on a student's ``### BEGIN HIDDEN TESTS`` without its
end, or twice, or in a cell that is not a graded one, and silently drops a lone ``### END HIDDEN
TESTS`` line; ``ClearSolutions`` reads ``### BEGIN SOLUTION`` the same way. :func:`neutralize_markers`
rewrites those delimiters in the cells a student can edit so that nbgrader no longer finds them,
without changing what the code does or what the text shows.
"""
from __future__ import annotations

import ast
import re

from IPython.core.inputtransformer2 import TransformerManager
from nbgrader import utils as nbgrader_utils
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

#: The delimiters nbgrader looks for (its defaults, which this course keeps).
MARKERS = tuple(cls.class_traits()[name].default_value for cls, name in (
    (ClearHiddenTests, "begin_test_delimeter"), (ClearHiddenTests, "end_test_delimeter"),
    (ClearSolutions, "begin_solution_delimeter"), (ClearSolutions, "end_solution_delimeter")))

_FOUND = re.compile("|".join(re.escape(marker) for marker in MARKERS))

# What stands for the last space of a delimiter: in code the escape \x20 (a space again inside a
# string literal, text in a comment), in markdown and raw text a space and a zero-width space.
_IN_CODE, _IN_TEXT = "\\x20", " \u200b"


def neutralize_markers(nb) -> list[str]:
    """Rewrite nbgrader's delimiters (:data:`MARKERS`) in the cells of ``nb`` (a staged
    notebook, its nbgrader metadata as released; changed in place) that nbgrader does not put
    back from the source (not ``is_locked``: answer cells and ordinary cells, code or text);
    returns notes for the instructor.

    In code the last space of each delimiter becomes ``\\x20``; the cell is kept so only when its
    syntax tree (IPython syntax translated first) is unchanged, as it is for a delimiter in a
    comment or in a string literal that is not raw; a cell that does not parse before or after
    is rewritten too (it runs nothing either way). In text a zero-width space follows that space,
    so the text shows the same. A code cell that cannot be rewritten so (a delimiter in a raw
    string, in a cell magic's body) is left as it is and noted: its feedback may fail."""
    done, left, found = [], [], set()
    for index, cell in enumerate(nb.cells):
        if nbgrader_utils.is_locked(cell) or not _FOUND.search(cell.source):
            continue
        stand_in = _IN_CODE if cell.cell_type == "code" else _IN_TEXT
        source = _FOUND.sub(lambda m: stand_in.join(m.group(0).rsplit(" ", 1)), cell.source)
        if cell.cell_type == "code" and not _same_code(cell.source, source):
            left.append(str(index + 1))
            continue
        found.update(_FOUND.findall(cell.source))
        cell.source = source
        done.append(str(index + 1))
    notes = []
    if done:
        shown = ", ".join(f"'{marker}'" for marker in MARKERS if marker in found)
        notes.append(f"nbgrader's markers ({shown}) in the student's text of cell"
                     f"{'s' if len(done) > 1 else ''} {', '.join(done)} were rewritten so that "
                     "nbgrader does not read them (in code a space written \\x20: the code is the "
                     "same)")
    if left:
        notes.append(f"cell{'s' if len(left) > 1 else ''} {', '.join(left)} "
                     f"hold{'' if len(left) > 1 else 's'} nbgrader's "
                     "markers where they cannot be rewritten without changing the code (a raw "
                     "string?): the feedback may fail")
    return notes


def _same_code(before: str, after: str) -> bool:
    """Whether the cell sources ``before`` and ``after`` are the same program: the same syntax
    tree, IPython syntax translated, or neither parses."""
    trees = []
    for source in (before, after):
        try:
            trees.append(ast.dump(compile(TransformerManager().transform_cell(source), "<cell>",
                                          "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                                          dont_inherit=True)))
        except Exception:  # SyntaxError, or what IPython's translation raises
            trees.append(None)
    return trees[0] == trees[1]
