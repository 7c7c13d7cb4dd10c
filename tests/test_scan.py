"""The static scan flags what no exercise needs, and never a correct answer written the ordinary
way: every sample submission, and every correct alternative the check tests accept. It scans the
notebook that grading runs, flags a cell that carries a locked cell's metadata it does not own,
and fails closed: what it cannot parse is a flag."""
import ast
import copy
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from autograder.grading.demo.samples import read_answers
from autograder.grading.intake.scan import review_submission, scan_notebook, scan_source
from autograder.grading.intake.scan_stores import binding_targets
from autograder.grading.intake.submissions import find_submissions, stage

ROOT = Path(__file__).resolve().parents[1]
COURSE_NAMES = {"tf": "tensorflow", "np": "numpy", "plt": "matplotlib.pyplot",
                "checks": "autograder.checks.tapes", "utils": "utils"}


@pytest.mark.parametrize("source,reason", [
    ("checks.check_square_grad = lambda f: None", "changes checks.check_square_grad"),
    ("tf.GradientTape = object", "changes tf.GradientTape"),
    ("checks = None", "rebinds checks"),
    ("def checks():\n    pass", "rebinds checks"),
    ("get_ipython().ast_transformers.append(t)", "IPython AST transformer"),
    ("get_ipython().input_transformers_cleanup.append(t)", "IPython input transformer"),
    ("get_ipython().set_custom_exc((Exception,), h)", "custom exception handler"),
    ("get_ipython().events.register('pre_run_cell', h)", "IPython event hooks"),
    ("import sys\nsys.modules['autograder.checks.tapes'] = fake", "sys.modules"),
    ("sys.meta_path.insert(0, finder)", "import hooks"),
    ("f.__code__ = g.__code__", "code objects"),
    ("import builtins\nbuiltins.print = p", "the builtins module"),
    ("exec(open('x').read())", "calls exec"),
    ("eval('1')", "calls eval"),
    ("import ctypes", "ctypes"),
    ("import subprocess\nsubprocess.run(['ls'])", "a subprocess"),
    ("import os\nos.system('ls /')", "a shell command"),
    ("!cat /etc/passwd", "a shell command"),
    ("open('/work/gradebook.db').read()", "file access"),
    ("import sqlite3", "a database"),
    ("%env SECRET=1", "the magic %env"),
    ("import inspect\ninspect.currentframe().f_back.f_globals", "frames"),
    ("def f(:", "does not parse"),
    # what a red-team session used to get past the scan
    ("from sys import displayhook as _dh\ndef square_grad(x):\n    _dh('ok')", "imports displayhook from sys"),
    ("ip = exit._ip\nS = type(ip)\nS.run_code = f", "uses exit"),
    ("ip = exit._ip\nS = type(ip)\nS.run_code = f", "private attribute"),
    ("type(get_ipython()).showtraceback = lambda *a: None", "changes type(get_ipython()).showtraceback"),
    ("import functools as ft\nft.update_wrapper(fake, orig)", "a function disguised as another"),
    ("c = checks\nc.__setattr__('check_x', fake)", "aliases checks"),
    ("c = checks\nc.__setattr__('check_x', fake)", "uses .__setattr__"),
    ("import types as T\nfrom sys import modules as M", "imports modules from sys"),
    ("for checks in [fake]:\n    pass", "rebinds checks"),
    ("with open_fake() as checks:\n    pass", "rebinds checks"),
    ("if (checks := fake):\n    pass", "rebinds checks"),
    ("import fake_module as checks", "rebinds checks"),
    ("for src in In:\n    print(src)", "uses In"),
    ("import os as q\nq.fork()", "uses q.fork"),
    ("getattr(checks, 'check_' + name)", "getattr with a computed or private name"),
    # a second red-team session
    ("from jupyter_client.session import Session\nput = setattr\nput(Session, 'send', f)",
     "imports from jupyter_client.session"),
    ("from jupyter_client.session import Session\nput = setattr\nput(Session, 'send', f)",
     "uses setattr as a value"),
    ("import operator\nimpl = operator.attrgetter('_implementation')(np.allclose)", "computed attribute access"),
    ("operator.attrgetter('__kwdefaults__')(checks.assert_close).update(atol=1)", "computed attribute access"),
    ("checks.assert_close.__kwdefaults__['atol'] = 1", "default arguments"),
    ("import linecache\nprint(linecache.cache)", "the source of executed cells"),
    ("get_ipython().kernel.get_parent()", "the message being executed"),
    # round 2: a method of GradientTape kept at cell time escapes the checks' wrapped attribute
    ("_tape_gradient = tf.GradientTape.gradient", "keeps tf.GradientTape.gradient as a value"),
    ("T = tf.GradientTape\ng = T.jacobian", "keeps T.jacobian as a value"),
    ("from tensorflow import GradientTape\nf = functools.partial(GradientTape.gradient)",
     "keeps GradientTape.gradient as a value"),
])


def test_construct_no_exercise_needs_is_flagged_with_its_line(source, reason):
    flags = scan_source(source, COURSE_NAMES)
    assert any(reason in r for _, r in flags), flags
    # line 0: the whole cell, for a cell that could not be scanned
    assert all(1 <= line <= source.count("\n") + 1 or (line == 0 and r.startswith("could not be scanned"))
               for line, r in flags)


def test_every_sample_submission_scans_clean(sample_class):
    built = sample_class
    scanned = 0
    for path in sorted(built.glob("*/*/*.ipynb")):
        assignment = path.parent.name
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:
            continue  # the invalid samples
        release = nbformat.read(ROOT / "notebooks" / assignment / f"{assignment}.ipynb", as_version=4)
        assert scan_notebook(nb, release) == [], path
        scanned += 1
    assert scanned >= 30


def _accepted_alternatives():
    """Source of each test in tests/test_checks_*.py whose name says a check accepts an answer:
    correct answers written in other ways than the solution."""
    for path in sorted((ROOT / "tests").glob("test_checks_*.py")):
        source = path.read_text()
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and "_accepts_" in node.name:
                yield pytest.param(ast.get_source_segment(source, node), id=node.name)


@pytest.mark.parametrize("source", list(_accepted_alternatives()))
def test_correct_alternative_answers_are_never_flagged(source):
    assert scan_source(source, COURSE_NAMES) == []


@pytest.mark.parametrize("source", [
    "from IPython.display import display, Markdown\ndisplay(Markdown('**done**'))",
    "plt.rcParams['figure.figsize'] = (6, 4)",
    "import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'",
    "%config InlineBackend.figure_format = 'retina'",
    "class Counter:\n    def __init__(self):\n        self._seen = 0\n    def add(self):\n        self._seen += 1",
    "from dataclasses import dataclass\n@dataclass\nclass S:\n    a: int = 1\nprint(vars(S()))",
    "opt = getattr(tf.keras.optimizers, opt_name)(learning_rate=0.1)",
    "import numpy as np\nfrom typing import Union\nsquare = lambda x: x * x\nprint(f'{square(3)}')",
])
def test_innocent_styles_a_student_may_write_are_not_flagged(source):
    assert scan_source(source, COURSE_NAMES) == []


# Fail closed (issue 17, class 3): a cell the scan cannot parse is a flag of its own.
DEEP = {
    "unary operators (MemoryError in the parser)": "x = " + "-" * 100000 + "1",
    "a long sum (RecursionError in the parser)": "x = " + "+".join(["1"] * 30000),
    "a long attribute chain (RecursionError)": "a" + ".b" * 30000,
    "a null byte": "x = 1\x00",
    "a syntax error": "def f(:",
    "too long to scan in time": "x = 1\n" * 40000,
}


@pytest.mark.parametrize("source", list(DEEP.values()), ids=list(DEEP))
def test_a_cell_the_scan_cannot_parse_is_itself_a_flag(source):
    flags = scan_source(source, COURSE_NAMES)
    assert flags and all(line == 0 and r.startswith("could not be scanned: ") for line, r in flags), flags


def test_code_past_what_the_scan_reads_in_a_notebook_is_flagged_not_skipped():
    release = _release()
    nb = copy.deepcopy(release)
    at = _index(nb, "square_grad")
    for n in range(8):
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(f"x{n} = 1\n" * 25000))
    nb.cells.insert(at + 9, nbformat.v4.new_code_cell("import ctypes"))
    flags = scan_notebook(nb, release)
    # 175 kB each: the first five are scanned, the next three are not (and say so), the little
    # cell after them still is
    assert [f for f in flags if "could not be scanned" in f] == [
        f"cell {at + n} could not be scanned: the code of the notebook is over the 1000 kB the scan "
        "reads in a notebook" for n in (7, 8, 9)], flags
    assert f"cell {at + 10} line 1: imports ctypes: ctypes (raw memory and C calls)" in flags


def test_top_level_await_which_ipython_runs_is_scanned_not_refused():
    flags = scan_source("import ctypes\nawait asyncio.sleep(0)", COURSE_NAMES)
    assert [r for _, r in flags] == ["imports ctypes: ctypes (raw memory and C calls)"]


def _release(assignment="01_gradient_tape"):
    return nbformat.read(ROOT / "notebooks" / assignment / f"{assignment}.ipynb", as_version=4)


def _index(nb, grade_id):
    return next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_an_unscannable_cell_is_flagged_and_the_other_flags_stay():
    release = _release()
    nb = copy.deepcopy(release)
    answer = _index(nb, "square_grad")
    nb.cells[answer].source = "import ctypes\ndef square_grad(x):\n    return 2 * x"
    nb.cells.insert(answer + 1, nbformat.v4.new_code_cell("y = " + "+".join(["1"] * 30000)))
    flags = scan_notebook(nb, release)
    assert f"cell {answer + 1} line 1: imports ctypes: ctypes (raw memory and C calls)" in flags, flags
    assert f"cell {answer + 2} could not be scanned: it is nested too deeply for Python's parser " \
           "(RecursionError)" in flags, flags


def test_a_notebook_the_scan_cannot_read_or_scan_is_a_flag_never_an_exception(tmp_path, monkeypatch):
    released = ROOT / "notebooks" / "01_gradient_tape" / "01_gradient_tape.ipynb"
    broken = tmp_path / "a.ipynb"
    broken.write_text("[" * 5000 + "]" * 5000)
    restored, flags = review_submission(broken, released)
    assert restored == [] and flags[0].startswith("the notebook could not be scanned: "), flags
    import autograder.grading.intake.scan as scan

    def explode(*args):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(scan, "imported_names", explode)
    assert scan_notebook(_release(), _release()) == [
        "the notebook could not be scanned: RecursionError: maximum recursion depth exceeded"]


# The scan over what runs (issue 17, class 2): a cell carrying a locked cell's metadata is not
# skipped as course code; it is flagged, scanned, and named by its number in the staged notebook.

def _staged_cells(tmp_path, nb):
    path = tmp_path / "class" / "erin" / "01_gradient_tape" / "01_gradient_tape.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    [sub] = find_submissions(tmp_path / "class", {"01_gradient_tape": ["01_gradient_tape"]})
    staged = stage(sub, tmp_path / "staged", release_dir=ROOT / "notebooks")
    return nbformat.read(staged / "01_gradient_tape.ipynb", as_version=4).cells


def _flagged_cell(flags, text):
    [flag] = [f for f in flags if text in f]
    return int(flag.split()[1])


@pytest.mark.parametrize("grade_id", ["setup", "test_square_grad", "square_grad_check"])
def test_a_copy_of_a_locked_cells_metadata_is_flagged_and_its_code_scanned(tmp_path, grade_id):
    release = _release()
    nb = copy.deepcopy(release)
    nb.cells.pop(_index(nb, "setup") + 1)  # a deleted cell before it: staged numbers differ
    at = _index(nb, grade_id)
    forged = copy.deepcopy(nb.cells[at])
    forged.source = "import ctypes\nctypes.CDLL(None)"
    forged.id = "forged"
    nb.cells.insert(at + 1, forged)
    flags = scan_notebook(nb, release)
    assert any(f"carries a copy of the nbgrader metadata of the locked cell '{grade_id}' (2 cells"
               in f for f in flags), flags
    number = _flagged_cell(flags, "imports ctypes")
    assert _flagged_cell(flags, "carries a copy") == number
    assert _staged_cells(tmp_path, nb)[number - 1].source == forged.source  # the cell that runs


def test_a_locked_cell_with_another_source_is_flagged():
    release = _release()
    nb = copy.deepcopy(release)
    nb.cells[_index(nb, "test_square_grad")].source = "import subprocess"
    flags = scan_notebook(nb, release)
    number = _index(nb, "test_square_grad") + 1
    assert f"cell {number} carries the nbgrader metadata of the locked cell 'test_square_grad' " \
           "with another source than the release's" in flags, flags
    assert f"cell {number} line 1: imports subprocess: a subprocess" in flags


def test_deleted_locked_cells_put_back_by_staging_are_not_flagged():
    release = _release()
    nb = copy.deepcopy(release)
    del nb.cells[_index(nb, "test_square_grad")]
    del nb.cells[_index(nb, "setup")]
    assert scan_notebook(nb, release) == []


def test_the_instructors_trust_page_says_the_scan_is_advisory():
    readme = " ".join((ROOT / "docs" / "instructors" / "trust.md").read_text().split())
    assert "The scan is advisory" in readme


def test_scan_flags_the_routes_into_the_checks_a_red_team_found():
    from autograder.grading.intake.scan import scan_source

    course = {"checks": "autograder.checks.tapes", "tf": "tensorflow", "np": "numpy"}
    found = " | ".join(r for _, r in scan_source(
        "table = checks.kernel_entry.COLLECTORS\n"
        "T = tf.GradientTape\nT.gradient = lambda *a: None\n"
        "from tensorflow import Variable\nVariable.assign = None\n"
        "import string\nstring.Formatter().get_field('0.__globals__', (f,), {})\n", course))
    for words in ("the grader's way into the kernel", "the checks' kernel halves",
                  "changes T.gradient", "changes Variable.assign", "calls get_field"):
        assert words in found, found
    assert scan_source("dtype = tf.float32\nx = np.pi * 2\n", course) == []


# Every store is read (issue: a red team's cell imported the grader's entry, renamed it through a
# ``for`` target and defined a class posing as it; the scan let the whole cell through).

ATTACK = ('from autograder.checks.kernel_entry import Entry as E\n'
          'for E.__qualname__ in ["Old"]: pass\n'
          'class Entry:\n'
          '    __module__ = "autograder.checks.kernel_entry"\n'
          '    __qualname__ = "Entry"\n'
          '    def observe(self, check_name, args, request):\n'
          '        return "{}"\n')


def test_the_red_teams_posing_cell_is_flagged_on_every_line_of_it():
    release = _release()
    nb = copy.deepcopy(release)
    answer = _index(nb, "square_grad")
    nb.cells.insert(answer + 1, nbformat.v4.new_code_cell(ATTACK))
    flags = scan_notebook(nb, release)
    cell = f"cell {answer + 2} line"
    machinery = "the checks' machinery (the grader's way into the kernel)"
    for flag in (f"{cell} 1: imports autograder.checks.kernel_entry: {machinery}",
                 f"{cell} 2: changes E.__qualname__, part of a module or of the interpreter",
                 f"{cell} 2: sets E.__qualname__: poses as another class or function",
                 f"{cell} 3: class Entry poses as another class or function (its body sets "
                 "__module__, __qualname__)",
                 f"{cell} 4: names autograder.checks.kernel_entry: the checks' machinery",
                 f"{cell} 4: sets __module__ in the body of class Entry: poses as another class or function",
                 f"{cell} 5: sets __qualname__ in the body of class Entry: poses as another class or function"):
        assert flag in flags, flags
    # the method's lines are ordinary code; every line before them is flagged
    assert {int(f.split()[3].rstrip(":")) for f in flags if f.startswith(cell)} == {1, 2, 3, 4, 5}


MACHINERY = "the checks' machinery"
POSES = "poses as another class or function"


STORE_ROUTES = [
    # 1. attribute stores of a module, wherever the target is
    ("for tf.GradientTape.gradient in [f]:\n    pass", 1,
     "changes tf.GradientTape.gradient, part of a module or of the interpreter"),
    ("for checks.check_square_grad in [fake]: pass", 1,
     "changes checks.check_square_grad, part of a module or of the interpreter"),
    ("x = 1\nwith open_fake() as checks.assert_close:\n    pass", 2,
     "changes checks.assert_close, part of a module or of the interpreter"),
    ("with a() as (b, [c, *tf.GradientTape.jacobian]):\n    pass", 1,
     "changes tf.GradientTape.jacobian, part of a module or of the interpreter"),
    ("ok = [0 for checks.x in range(3)]", 1, "changes checks.x, part of a module or of the interpreter"),
    ("ok = {k: v for k, tf.foo in d.items()}", 1, "changes tf.foo, part of a module or of the interpreter"),
    ("tf.GradientTape.gradient += 1", 1, "changes tf.GradientTape.gradient, part of a module or of the interpreter"),
    ("checks.y: int = 3", 1, "changes checks.y, part of a module or of the interpreter"),
    ("del checks.check_square_grad", 1, "changes checks.check_square_grad, part of a module or of the interpreter"),
    ("a, (b, [c, *checks.w]) = 1, (2, [3, 4])", 1, "changes checks.w, part of a module or of the interpreter"),
    ("for T in [tf.GradientTape]:\n    T.gradient = f", 2,
     "changes T.gradient, part of a module or of the interpreter"),
    ("if (T := tf.GradientTape):\n    U = T\n    U.gradient = f", 3,
     "changes U.gradient, part of a module or of the interpreter"),
    # 1. names the course imports, rebound by any binding
    ("if (checks := fake):\n    pass", 1, "rebinds checks, a name the course imports"),
    ("ys = [tf for tf in range(3)]", 1, "rebinds tf, a name the course imports"),
    ("for i, (np, y) in enumerate(d):\n    pass", 1, "rebinds np, a name the course imports"),
    ("try:\n    pass\nexcept Exception as checks:\n    pass", 3, "rebinds checks, a name the course imports"),
    ("match x:\n    case [a, *np]:\n        pass", 2, "rebinds np, a name the course imports"),
    ("match x:\n    case {'a': 1, **plt}:\n        pass", 2, "rebinds plt, a name the course imports"),
    ("match x:\n    case str() as checks:\n        pass", 2, "rebinds checks, a name the course imports"),
    ("import numpy as tf", 1, "rebinds tf, a name the course imports"),
    ("from autograder.checks import graphs as checks", 1, "rebinds checks, a name the course imports"),
    ("class tf:\n    pass", 1, "rebinds tf, a name the course imports"),
    ("(c := checks)", 1, "aliases checks, a module"),
    ("for m in [np, checks]:\n    pass", 1, "aliases checks, a module"),
    ("from evil import *", 1, "imports * from evil: names it binds may rebind the course's"),
    # 2. attributes changed by name, namespaces changed as dicts
    ("setattr(checks, 'f', g)", 1, "calls setattr: setattr (an attribute changed by name)"),
    ("delattr(checks, 'f')", 1, "calls delattr: delattr (an attribute removed by name)"),
    ("vars(checks)['f'] = g", 1, "changes vars(checks)['f'], an item of a namespace (vars, __dict__, globals)"),
    ("m = tf.keras\nvars(m)['f'] = g", 2, "changes vars(m)['f'], an item of a namespace (vars, __dict__, globals)"),
    ("checks.__dict__['f'] = g", 1,
     "changes checks.__dict__['f'], an item of a namespace (vars, __dict__, globals)"),
    ("globals()['checks'] = g", 1, "changes globals()['checks'], an item of a namespace (vars, __dict__, globals)"),
    ("del vars(m)['x']", 1, "changes vars(m)['x'], an item of a namespace (vars, __dict__, globals)"),
    ("for vars(m)['x'] in [1]:\n    pass", 1, "changes vars(m)['x'], an item of a namespace (vars, __dict__, globals)"),
    ("locals().update(checks=g)", 1, "changes locals() through .update, a namespace (vars, __dict__, globals)"),
    ("object.__setattr__(checks, 'f', g)", 1, "uses .__setattr__: an attribute changed by name"),
    ("type.__setattr__(tf.GradientTape, 'gradient', g)", 1, "uses .__setattr__: an attribute changed by name"),
    ("class M(tf.keras.Model):\n    def __init__(self):\n        super().__init__()\n"
     "        super().__setattr__('x', 1)", 4, "uses .__setattr__: an attribute changed by name"),
    ("type.__delattr__(tf.GradientTape, 'gradient')", 1, "uses .__delattr__: an attribute removed by name"),
    # 3. the checks' machinery, under any spelling
    ("from autograder.checks import kernel_entry", 1,
     f"imports autograder.checks.kernel_entry: {MACHINERY} (the grader's way into the kernel)"),
    ("from autograder.checks.kernel_entry import Entry", 1,
     f"imports autograder.checks.kernel_entry: {MACHINERY} (the grader's way into the kernel)"),
    ("import autograder.checks.kernel_entry as k", 1,
     f"imports autograder.checks.kernel_entry: {MACHINERY} (the grader's way into the kernel)"),
    ("from autograder.checks import tapes, harness", 1,
     f"imports autograder.checks.harness: {MACHINERY} (how the checks call student code)"),
    ("from autograder.checks.judge import tapes", 1,
     f"imports autograder.checks.judge: {MACHINERY} (the checks' grader halves)"),
    ("import autograder.checks.plain", 1,
     f"imports autograder.checks.plain: {MACHINERY} (what a kernel sends the grader)"),
    ("from autograder.checks.compare import CheckFailed", 1,
     f"imports autograder.checks.compare: {MACHINERY} (how the checks compare and fail)"),
    ("import autograder.checks.tapes\nautograder.checks.harness.call(f)", 2,
     f"uses autograder.checks.harness: {MACHINERY} (how the checks call student code)"),
    ("importlib.import_module('autograder.checks.kernel_entry')", 1,
     f"names autograder.checks.kernel_entry: {MACHINERY}"),
    ("__import__('autograder.checks.harness')", 1, f"names autograder.checks.harness: {MACHINERY}"),
    ("x = 1\npath = 'autograder.checks.judge.tapes'", 2, f"names autograder.checks.judge: {MACHINERY}"),
    ("__import__('autograder.checks', fromlist=['kernel_entry'])", 1, f"names kernel_entry: {MACHINERY}"),
    ("import autograder.grading.defaults", 1, "imports autograder.grading.defaults: the grader"),
    ("import autograder", 1, "imports autograder: the grader"),
    ("from autograder import checks as c", 1, "imports from autograder: the grader"),
    # 4. posing as another class or function
    ("obj.__class__ = X", 1, f"sets obj.__class__: {POSES}"),
    ("Entry.__qualname__ = 'Old'", 1, f"sets Entry.__qualname__: {POSES}"),
    ("def square_grad(x):\n    return 2 * x\nsquare_grad.__name__ = 'check'", 3, f"sets square_grad.__name__: {POSES}"),
    ("for f.__module__ in ['autograder']:\n    pass", 1, f"sets f.__module__: {POSES}"),
    ("class A:\n    __name__ = 'Entry'", 2, f"sets __name__ in the body of class A: {POSES}"),
    ("class A:\n    __name__ = 'Entry'", 1, f"class A {POSES} (its body sets __name__)"),
    ("class A:\n    for __qualname__ in ['Entry']:\n        pass", 2,
     f"sets __qualname__ in the body of class A: {POSES}"),
    ("class A:\n    if True:\n        (__module__ := 'x')", 3, f"sets __module__ in the body of class A: {POSES}"),
    ("class A:\n    @property\n    def __class__(self):\n        return Entry", 3,
     f"sets __class__ in the body of class A: {POSES}"),
    ("class M(type):\n    def __instancecheck__(cls, x):\n        return True", 2,
     f"sets __instancecheck__ in the body of class M: {POSES}"),
    ("__name__ = 'autograder.checks.' + part\nclass Entry:\n    pass", 1, f"rebinds __name__: {POSES}"),
    ("E = type('Entry', (), {'__qualname__': 'Entry'})", 1, f"sets __qualname__ in a dict: {POSES}"),
    ("E = make(__module__='autograder.checks.kernel_entry')", 1, f"sets __module__ as a keyword: {POSES}"),
]


@pytest.mark.parametrize("source,line,reason", STORE_ROUTES)
def test_every_store_and_route_is_flagged_with_its_line_and_words(source, line, reason):
    assert (line, reason) in scan_source(source, COURSE_NAMES), scan_source(source, COURSE_NAMES)


@pytest.mark.parametrize("source", [
    "for i, (x, y) in enumerate(ds):\n    print(i, x, y)\nfor e, (xb, [yb, *rest]) in enumerate(b):\n    pass",
    "with tf.GradientTape() as tape:\n    y = x * x\nwith tf.GradientTape(persistent=True) as t1, "
    "tf.GradientTape() as t2:\n    z = y",
    "ys = [x ** 2 for x in xs]\nd = {k: v for k, v in pairs}\ns = {a for a, _ in pairs}\n"
    "g = sum(v for v in ys if (w := v) > 0)",
    "if (n := len(xs)) > 3:\n    print(n)",
    "class Dense(tf.keras.layers.Layer):\n    def __init__(self, units=3, **kwargs):\n"
    "        super().__init__(**kwargs)\n        self.units = units\n"
    "        self.dense = tf.keras.layers.Dense(units)\n    def build(self, shape):\n"
    "        self.w = self.add_weight(shape=(shape[-1], self.units), initializer='zeros')\n"
    "        self.b, self.c = tf.Variable(0.0), tf.Variable(1.0)\n    def call(self, x):\n"
    "        print(type(self).__name__, self.__class__.__name__, self.__class__.__qualname__)\n"
    "        return x @ self.w",
    "try:\n    f()\nexcept ValueError as err:\n    print(err)",
    "match cmd:\n    case [first, *others]:\n        pass\n    case {'k': v, **more}:\n        pass\n"
    "    case Point(x=px) as pt:\n        pass",
    "import tensorflow as tf\nfrom autograder.checks import tapes as checks\n"
    "from autograder.checks.capture import capture_output",
    "x: tf.Tensor = tf.constant(1.0)\ndel tape\na, *rest = xs\nfor layer in model.layers:\n"
    "    layer.trainable = False",
    "for dtype in [tf.float32, tf.float64]:\n    x = tf.constant(1, dtype=dtype)",
    "plt.title('plain vs compare')\nplt.plot(xs, ys, label='harness judge')\nname = f.__name__\n"
    "print('the autograder checks plain values')",
    "@tf.function\ndef f(x):\n    return x * 2\nif __name__ == '__main__':\n    f(1)",
])
def test_ordinary_stores_a_student_writes_are_not_flagged(source):
    assert scan_source(source, COURSE_NAMES) == []


def _answer_sources():
    """Every answer cell of every sample submission (the solutions' answers among them)."""
    for path in sorted((ROOT / "tests" / "samples" / "answers").glob("*/*.py")):
        yield from (s for s in read_answers(path.parent.parent, path.parent.name, path.stem, ROOT).values())


def test_binding_targets_reads_every_store_of_a_tree():
    """Each name, attribute and item that Python stores into or deletes (ast ctx Store or Del),
    in every sample answer and in every store the tests above flag, is a target binding_targets
    yields: the scan's one reader of stores misses none."""
    sources = list(_answer_sources()) + [ATTACK] + [source for source, _, _ in STORE_ROUTES]
    assert len(sources) > 200
    for source in sources:
        tree = ast.parse(TransformerManager().transform_cell(source))
        yielded = {id(t) for _, _, t in binding_targets(tree) if not isinstance(t, str)}
        stores = [n for n in ast.walk(tree) if isinstance(getattr(n, "ctx", None), (ast.Store, ast.Del))
                  and not isinstance(n, (ast.Tuple, ast.List, ast.Starred))]
        assert all(id(n) in yielded for n in stores), (source, [ast.unparse(n) for n in stores if id(n) not in yielded])
