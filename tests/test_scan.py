"""The static scan flags what no exercise needs, and never a correct answer written the ordinary
way: every sample submission, and every correct alternative the check tests accept."""
import ast
from pathlib import Path

import nbformat
import pytest

from autograder.grading.samples import build_sample_class
from autograder.grading.scan import scan_notebook, scan_source

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
])


def test_construct_no_exercise_needs_is_flagged_with_its_line(source, reason):
    flags = scan_source(source, COURSE_NAMES)
    assert any(reason in r for _, r in flags), flags
    assert all(1 <= line <= source.count("\n") + 1 for line, _ in flags)


def test_every_sample_submission_scans_clean(tmp_path):
    built = build_sample_class(tmp_path)
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
