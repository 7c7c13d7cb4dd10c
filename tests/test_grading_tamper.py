"""A student after unearned points, or out to harm others: probe submissions of 01 (the unanswered
release plus one attack each, in the first answer cell), graded by one real sandboxed
`course grade` run beside an innocent full submission. Each probe either earns nothing and harms
no one, or is flagged for review with its reason."""
import csv
import hashlib
import re
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import nbformat
import pytest

from autograder.grading.kernels.bwrap import sandbox_problem
from tests.conftest import grading_workers, hashes as _hashes

ASSIGNMENT = "01_gradient_tape"
ROOT = Path(__file__).resolve().parents[1]
GUARDED = [ROOT / "autograder" / "checks" / "tapes.py",
           ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"]
HIDDEN_LINE = "cases=[0.5, -4, 7, 10.25]"  # a line of the hidden tests of test_square_grad

pytestmark = pytest.mark.skipif(sandbox_problem() is not None,
                                reason=f"no sandbox on this host: {sandbox_problem()}")


def _probes(paths: dict) -> dict[str, str]:
    """student id -> the code that replaces the first answer cell (square_grad)."""
    return {
        "run_solutions": f"""
import json, os, pathlib, autograder
roots = [pathlib.Path(autograder.__file__).resolve().parents[1], pathlib.Path({paths['root']!r})]
for pid in os.listdir('/proc'):
    try:
        roots.append(pathlib.Path(os.readlink(f'/proc/{{pid}}/cwd')))
    except OSError:
        pass
for root in roots:
    path = root / 'solutions' / {ASSIGNMENT!r} / '{ASSIGNMENT}.ipynb'
    if path.exists():
        for cell in json.loads(path.read_text())['cells']:
            if cell['metadata'].get('nbgrader', {{}}).get('solution'):
                exec(''.join(cell['source']).replace('### BEGIN SOLUTION', '').replace('### END SOLUTION', ''))
""",
        "read_hidden_tests": """
import os
for top in ['.', '/tmp', os.path.expanduser('~'), '/work', '/root', '/home']:
    for folder, _, files in os.walk(top):
        for name in files:
            if name.endswith(('.db', '.ipynb', '.json')):
                try:
                    print(folder, name, open(os.path.join(folder, name), errors='replace').read()[:100000])
                except OSError:
                    pass
""",
        "rewrite_checks": f"""
import nbgrader.preprocessors.saveautogrades as save
for path in [{str(GUARDED[0])!r}, save.__file__]:
    try:
        with open(path, 'a') as handle:
            handle.write('\\nraise SystemExit  # pwned\\n')
    except OSError as error:
        print(error)
""",
        "edit_gradebook": f"""
import subprocess, sys
code = '''
import sqlite3, time
time.sleep(2)
con = sqlite3.connect({paths['gradebook']!r})
con.execute("UPDATE grade SET auto_score = 0")
con.execute("UPDATE grade SET manual_score = 100")
con.commit()
'''
subprocess.Popen([sys.executable, '-c', code], start_new_session=True)
""",
        "overwrite_others": f"""
import glob
for path in [{paths['innocent']!r}] + glob.glob({paths['out']!r} + '/runs/*/staged/*/*/*.ipynb'):
    try:
        open(path, 'w').write('{{}}')
    except OSError as error:
        print(error)
""",
        "network": f"""
import socket
try:
    socket.create_connection(('127.0.0.1', {paths['port']}), timeout=3)
except OSError as error:
    print('no network:', error)
""",
        "linger": f"""
import subprocess
subprocess.Popen(['bash', '-c', 'exec -a {paths['marker']} sleep 900'], start_new_session=True)
""",
        "patch_checks": """
checks.check_square_grad = lambda *args, **kwargs: None

def square_grad(x):
    return None
""",
        "ast_transformer": """
import ast

class EverythingPasses(ast.NodeTransformer):
    def visit_Module(self, node):
        return ast.Module(body=[ast.Pass()], type_ignores=[])

get_ipython().ast_transformers.append(EverythingPasses())
""",
        "exception_handler": """
get_ipython().set_custom_exc((Exception,), lambda *args, **kwargs: None)
""",
        # Routes a red-team session found past the first defences.
        "display_result": """
from sys import displayhook as _dh

def square_grad(x):
    _dh("ok")
""",
        "shell_class": """
ip = exit._ip
S = type(ip)
_orig = S.run_code

async def _rc(self, code_obj, result=None, *, async_=False):
    await _orig(self, code_obj, None, async_=async_)
    return False

S.run_code = _rc
S.showtraceback = lambda self, *a, **k: None

def square_grad(x):
    return None
""",
        "wrapped_checks": """
import functools as ft
c = checks
orig = c.check_square_grad

def fake(*a, **k):
    print("passed")

ft.update_wrapper(fake, orig)
c.__setattr__("check_square_grad", fake)
""",
        "fake_module": """
import types as T
from sys import modules as M
fake = T.ModuleType("autograder.checks.zz")
fake.__file__ = "/dev/null"
fake.__setattr__("check_square_grad", lambda *a, **k: None)
M["autograder.checks.zz"] = fake
for checks in [fake]:
    pass
""",
        "helpers_of_checks": """
c = checks
c.assert_close = lambda *a, **k: None
c.fail = lambda *a, **k: None

def square_grad(x):
    return tf.constant(0.0)
""",
        "history": """
def square_grad(x):
    for source in In:
        print(source)
    return 2 * x
""",
        "shared_memory": """
import numpy
try:
    numpy.ones(2**27).tofile("/dev/shm/big")
except OSError as error:
    print(error)
""",
        "flood": """
display({"text/plain": "A" * 30_000_000}, raw=True)
""",
        "terminal_escapes": """
def square_grad(x):
    raise ValueError("\x1b[2J\x1b[3J\x1b[H all clear")
""",
        # Routes a second red-team session found.
        "session_send": """
from jupyter_client.session import Session
original_send = Session.send

def quiet_send(self, stream, msg_or_type, content=None, *args, **kwargs):
    kind = msg_or_type if isinstance(msg_or_type, str) else msg_or_type.get("header", {}).get("msg_type")
    if kind == "error":
        return {}
    if kind == "execute_reply" and isinstance(content, dict) and content.get("status") == "error":
        content = {"status": "ok", "execution_count": content.get("execution_count"),
                   "user_expressions": {}, "payload": []}
    return original_send(self, stream, msg_or_type, content, *args, **kwargs)

put = setattr
put(Session, "send", quiet_send)
""",
        "code_swap": """
import operator
put = setattr
impl = operator.attrgetter("_implementation")(np.allclose)
always = lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: True
put(impl, "__co" + "de__", operator.attrgetter("__co" + "de__")(always))

def square_grad(x):
    return tf.constant(0.0)
""",
        "linecache": """
import linecache

def square_grad(x):
    raise ValueError("".join("".join(entry[2]) for entry in list(linecache.cache.values())))
""",
        # Routes of issue 17: the verdict computed in the student's interpreter, hidden inputs
        # kept by the student's function.
        "frame_reader": """
import inspect

class BecomesExpected:
    def numpy(self):
        for frame in inspect.stack():
            for name in ("expected", "want", "reference"):
                if name in frame.frame.f_locals:
                    return frame.frame.f_locals[name]
        return 0.0

def square_grad(x):
    return BecomesExpected()
""",
        "forged_reply": """
import ast, re
from autograder.checks import plain

def square_grad(x):
    kernel = get_ipython().kernel
    parent = kernel.get_parent()
    request = parent.get("content", {}).get("user_expressions", {}).get("answer", "")
    found = re.search(r"lambda: \\(square_grad, \\), ('\\{.*?\\}')\\)", request)
    address = re.search(r"h\\(d\\) == (\\d+)", request)
    if found and address:  # a perfect forgery: the door's own addresses, read afresh
        h = object.__hash__
        door = [d for d in object.__subclasses__() if h(d) == int(address.group(1))][0]
        f = door.__dict__["observe"]
        e = f.__defaults__[0]
        prints = tuple(h(x) for x in (f, f.__code__, f.__defaults__, e, e.__code__, e.__defaults__))
        cases = plain.loads(ast.literal_eval(found.group(1)))["cases"]
        forged = plain.dumps({"eager": False, "cases": [
            {"obs": {"result": tf.constant(2.0 * float(c)), "from_tape": True,
                     "targets": [float(c) ** 2]}} for c in cases]})
        kernel.session.send(kernel.shell_stream, "execute_reply", {
            "status": "ok", "execution_count": 1, "payload": [], "user_expressions": {
                "answer": {"status": "ok", "data": {"text/plain": repr((prints, forged))},
                           "metadata": {}}}},
            parent=parent, ident=kernel._parent_ident["shell"])
    return tf.constant(2.0 * x, dtype=tf.float32)
""",
        "shadow_names": """
def exec(*args, **kwargs):
    return {"changed": [], "checks": []}

def __import__(*args, **kwargs):
    raise ImportError("nothing to import")

def square_grad(x):
    return tf.constant(2.0 * x, dtype=tf.float32)
""",
        "keep_inputs": """
import threading, time
SEEN = []

def square_grad(x):
    SEEN.append(x)
    return tf.constant(0.0)

def _tell():
    for _ in range(300):
        print("SEEN", SEEN, flush=True)
        time.sleep(0.1)

threading.Thread(target=_tell, daemon=True).start()
""",
        # Routes a red-team session found past the verdict's first form.
        "replace_collectors": """
table = checks.kernel_entry.COLLECTORS

def fake(fn, case, ctx):
    return {"result": np.float64(2.0 * float(case)), "from_tape": True}

table["check_square_grad"] = fake

def square_grad(x):
    raise NotImplementedError()
""",
        "display_update": """
import threading, time
from IPython.display import display
SEEN = []
board = display("notes", display_id=True)

def square_grad(x):
    SEEN.append(x)
    return tf.constant(0.0)

def _update():
    for _ in range(300):
        board.update("SEEN " + repr(SEEN))
        time.sleep(0.1)

threading.Thread(target=_update, daemon=True).start()
""",
        "metadata_flood": """
from IPython.display import display
for _ in range(30):
    display({"text/plain": "."}, raw=True, metadata={"note": "A" * 1_000_000})
""",
        "type_name": """
def square_grad(x):
    raise type("input_" + str(x).replace("-", "m").replace(".", "_"), (Exception,), {})()
""",
        # Routes of issue 26: the grader's way into the kernel swapped by names, replaced, or
        # deleted; a hidden input carried out in an exception's type name made of digits.
        "posing_entry": """
from autograder.checks import kernel_entry as K, plain as P
Real = K.Entry
for Real.__qualname__ in ["Old"]:
    pass

class Entry:
    __module__ = "autograder.checks.kernel_entry"
    __qualname__ = "Entry"

    @staticmethod
    def observe(check, args, request):
        cases = P.loads(request)["cases"]
        return P.dumps({"eager": False, "cases": [{"obs": {
            "result": 2.0 * float(c), "from_tape": True, "targets": [float(c) ** 2]}} for c in cases]})

    @staticmethod
    def probe(source, *args):
        return {"changed": [], "checks": []}

def square_grad(x):
    raise NotImplementedError()
""",
        "entry_code_swap": """
from autograder.checks.kernel_entry import Entry

def forged(check_name, args, request):
    cases = plain.loads(request)["cases"]
    return plain.dumps({"eager": False, "cases": [{"obs": {
        "result": 2.0 * float(c), "from_tape": True, "targets": [float(c) ** 2]}} for c in cases]})

Entry.observe.__code__ = forged.__code__
""",
        "door_via_gc": """
import gc
from autograder.checks import plain

def forged(check, args, request):
    cases = plain.loads(request)["cases"]
    return plain.dumps({"eager": False, "cases": [{"obs": {
        "result": 2.0 * float(c), "from_tape": True, "targets": [float(c) ** 2]}} for c in cases]})

for door in [o for o in gc.get_objects() if isinstance(o, type) and o.__name__ == "Door"]:
    door.observe = forged  # called with no entry in its defaults: the door's expression fails
    door.probe = lambda source, args, *rest: {"changed": [], "checks": []}
""",
        "door_deleted": """
import builtins, gc
for name in [k for k in vars(builtins) if k.startswith("_grader")]:
    delattr(builtins, name)
gc.collect()
""",
        "module_swap": """
import sys, types
from autograder.checks import plain
fake = types.ModuleType("autograder.checks.kernel_entry")

class Entry:
    @staticmethod
    def observe(check, args, request):
        return plain.dumps({"eager": False, "cases": [{"obs": {"result": 2.0 * float(c), "from_tape": True}}
                                                      for c in plain.loads(request)["cases"]]})

fake.Entry = Entry
sys.modules["autograder.checks.kernel_entry"] = fake
checks.kernel_entry = fake
""",
        "module_class": """
import types

class Forging(types.ModuleType):
    def __getattribute__(self, name):
        return object.__getattribute__(self, name)

checks.kernel_entry.__class__ = Forging
""",
        "reload_entry": """
import importlib
importlib.reload(checks.kernel_entry)

def square_grad(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)
""",
        # The integrity check's own record in the kernel (kept on builtins): a change made, then
        # the record emptied or replaced, so that the next check compares against nothing.
        "record_cleared": """
import builtins
tf.GradientTape.gradient = lambda self, target, sources, **kwargs: sources
for name in [k for k in dir(builtins) if k.startswith("_grader") and not k.endswith("_door")]:
    vars(builtins)[name].clear()
""",
        "record_replaced": """
import builtins
tf.GradientTape.gradient = lambda self, target, sources, **kwargs: sources
for name in [k for k in dir(builtins) if k.startswith("_grader") and not k.endswith("_door")]:
    vars(builtins)[name]["state"] = {}
    vars(builtins)[name]["compiled"] = {}
""",
        "collector_swapped_quietly": """
import builtins
checks.collect_square_grad = lambda *args, **kwargs: {"result": 0.0}
for name in [k for k in dir(builtins) if k.startswith("_grader") and not k.endswith("_door")]:
    vars(builtins)[name].clear()
""",
        # Deleted before one check, put back as another object after it: a key removed is a change.
        "deleted_then_put_back": """
del checks.fail
# %% next answer cell
checks.fail = lambda *args, **kwargs: None
""",
        # Every value the checks read goes through an eager tensor's numpy().
        "tensor_numpy": """
real = type(tf.constant(0.0)).numpy
type(tf.constant(0.0)).numpy = lambda self: real(self)
""",
        "record_not_plain": """
class Same(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__

import sys
type(sys.stdout).__module__ = Same(type(sys.stdout).__module__)
""",
        "builtin_type_choice": """
KINDS = [ArithmeticError, AttributeError, BufferError, EOFError, ImportError, IndexError, KeyError,
         LookupError, NameError, OSError, ReferenceError, RuntimeError, SystemError, TypeError]

def square_grad(x):
    if float(x) not in (3.0, -1.5, 2.0):  # not a visible input: spell it in a builtin's name
        raise KINDS[int(abs(float(x))) % len(KINDS)]()
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)
""",
        "digits_type": """
def square_grad(x):
    x = tf.constant(x, dtype=tf.float32)
    if abs(float(x) + 4) < 1e-6:  # a hidden case, spelled in the exception's type name
        raise type(str(int(abs(float(x)) * 1000)), (Exception,), {})()
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)
""",
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory, sample_class):
    full = nbformat.read(sample_class / "ada_full" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    blank = nbformat.read(sample_class / "ben_blank" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    submitted, out = tmp_path_factory.mktemp("class"), tmp_path_factory.mktemp("out")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    innocent = submitted / "ada_full" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    paths = {"root": str(ROOT), "gradebook": str(out / "gradebook.db"), "out": str(out),
             "innocent": str(innocent), "port": server.getsockname()[1],
             "marker": f"linger-{uuid.uuid4().hex}"}
    notebooks = {"ada_full": full}
    for student, code in _probes(paths).items():
        nb = nbformat.from_dict(blank)
        first = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
        # The first answer cell is 01's prediction: each probe also predicts right (what the
        # draft returns for 3.0 and for the integer 2), so its test cell grades square_grad.
        code, _, second = code.partition("# %% next answer cell\n")  # a route in two cells
        first.source = "predicted_float, predicted_int = 6.0, None\n" + code.strip()
        if second:
            [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")][1].source = second
        notebooks[student] = nb
    notebooks["bad\udcffname"] = full  # a folder name that is not UTF-8
    for student, nb in notebooks.items():
        path = submitted / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
    relabelled = nbformat.from_dict(blank)  # an answer cell made a graded cell of 10 points
    cell = [c for c in relabelled.cells if c.metadata.get("nbgrader", {}).get("solution")][1]
    cell.metadata["nbgrader"].update(grade=True, points=10)
    path = submitted / "relabelled" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(relabelled, path)
    linked = submitted / "symlinks" / ASSIGNMENT
    linked.mkdir(parents=True)
    (linked / f"{ASSIGNMENT}.ipynb").symlink_to(GUARDED[1])  # the solutions, hidden tests and all
    (linked / "notes.txt").symlink_to(GUARDED[1])
    before = _hashes(submitted)
    guarded = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in GUARDED}
    import nbgrader.preprocessors.saveautogrades as save
    nbgrader_file = Path(save.__file__)
    guarded[nbgrader_file] = hashlib.sha256(nbgrader_file.read_bytes()).hexdigest()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "autograder.cli", "grade", str(submitted), "--out", str(out),
             "--workers", str(grading_workers()), "--assignment", ASSIGNMENT],
            capture_output=True, text=True, timeout=1800)
        try:
            server.accept()
            connected = True
        except OSError:
            connected = False
    finally:
        server.close()
    with open(out / "scores_by_exercise.csv") as handle:
        rows = list(csv.DictReader(handle))
    by = {}
    for row in rows:
        by.setdefault(row["student_id"], []).append(row)
    left = subprocess.run(["pgrep", "-f", paths["marker"]], capture_output=True, text=True).stdout
    return {"proc": proc, "out": out, "by": by, "connected": connected, "left": left,
            "unchanged": before == _hashes(submitted) and all(
                hashlib.sha256(p.read_bytes()).hexdigest() == h for p, h in guarded.items())}


def _score(rows) -> float:
    return sum(float(r["score"]) for r in rows)


def _review(rows) -> str:
    return rows[0]["needs_review"]


def test_innocent_full_submission_keeps_full_marks_unflagged(graded):
    rows = graded["by"]["ada_full"]
    assert _score(rows) == 10 and _review(rows) == "", graded["proc"].stdout


@pytest.mark.parametrize("student", ["run_solutions", "read_hidden_tests", "rewrite_checks",
                                     "edit_gradebook", "overwrite_others", "network", "linger",
                                     "display_result", "shared_memory", "flood", "symlinks",
                                     "terminal_escapes", "relabelled", "linecache",
                                     "frame_reader", "forged_reply", "shadow_names",
                                     "keep_inputs", "patch_checks", "ast_transformer",
                                     "exception_handler", "shell_class", "wrapped_checks",
                                     "fake_module", "helpers_of_checks", "history",
                                     "session_send", "code_swap", "display_update",
                                     "metadata_flood", "type_name", "posing_entry",
                                     "entry_code_swap", "door_via_gc", "door_deleted",
                                     "module_swap", "module_class"])
def test_probe_that_the_sandbox_stops_earns_nothing(graded, student):
    assert _score(graded["by"][student]) == 0, graded["by"][student]


@pytest.mark.parametrize("student,points,flag", [
    ("patch_checks", 0, "changes checks.check_square_grad"),
    ("patch_checks", 0, "an attribute of a check module or of a module it uses was changed"),
    ("ast_transformer", 0, "uses .ast_transformers"),
    ("ast_transformer", 0, "an IPython AST transformer was changed while cell"),
    ("exception_handler", 0, "a custom exception handler was changed while cell"),
    ("display_result", 0, "imports displayhook from sys"),
    ("shell_class", None, "a method of the IPython shell or the kernel was changed while cell"),
    ("shell_class", None, "uses exit"),
    ("wrapped_checks", None, "calls update_wrapper"),
    ("wrapped_checks", None, "an attribute of a check module or of a module it uses was changed"),
    ("fake_module", None, "rebinds checks"),
    ("fake_module", None, "the name 'checks' no longer refers to the course's check module"),
    ("helpers_of_checks", None, "an attribute of a check module or of a module it uses was changed"),
    ("history", None, "uses In"),
    ("session_send", None, "imports from jupyter_client.session"),
    ("session_send", None, "a method of the IPython shell or the kernel was changed while cell"),
    ("code_swap", None, "computed attribute access"),
    ("code_swap", None, "an attribute of a check module or of a module it uses was changed"),
    ("linecache", None, "the source of executed cells"),
    ("forged_reply", 0, "the kernel answered the grader twice"),
    ("replace_collectors", None, "autograder.checks.harness.COLLECTORS is not the course's code"),
    ("posing_entry", 0, "a class posing as the course's autograder.checks.kernel_entry.Entry"),
    ("posing_entry", 0, "the grader's entry kernel_entry.Entry was renamed or replaced"),
    ("entry_code_swap", 0, "the grader's door into the kernel was altered (the entry function's code)"),
    ("door_via_gc", 0, "the kernel could not answer the grader (TypeError in its door)"),
    ("door_via_gc", 0, "the grader's door into the kernel was altered (the door's function to the integrity check"),
    ("door_deleted", 0, "the kernel could not answer the grader"),
    ("door_deleted", 0, "the integrity check failed: IndexError"),
    ("module_swap", 0, "a module in sys.modules was changed"),
    ("module_swap", 0, "an attribute of a check module or of a module it uses was changed"),
    ("module_class", 0, "a module in sys.modules was changed"),
    ("reload_entry", 2, "the grader's entry kernel_entry.Entry was renamed or replaced"),
    ("record_cleared", 0, "the integrity check's record in the kernel was changed between two checks"),
    ("record_replaced", 0, "the integrity check's record in the kernel was changed between two checks"),
    ("record_not_plain", 0, "the interpreter's state holds values of the notebook's own types"),
    ("tensor_numpy", 0, "a method of tf.GradientTape or of another class the checks observe was changed"),
    ("deleted_then_put_back", None, "an attribute of a check module or of a module it uses was changed while cell"),
    ("collector_swapped_quietly", None, "autograder.checks.tapes.collect_square_grad is not the course's code"),
    ("collector_swapped_quietly", None, "the integrity check's record in the kernel was changed between two checks"),
])
def test_probe_in_its_own_interpreter_is_flagged_for_review_with_the_reason(graded, student, points, flag):
    rows = graded["by"][student]
    assert points is None or _score(rows) == points, rows
    assert flag in _review(rows), _review(rows)
    assert f"{student} / {ASSIGNMENT}: " in (graded["out"] / "summary.txt").read_text()


def test_no_probe_harms_anyone_or_anything(graded):
    assert graded["unchanged"]  # submissions, checks, solutions, nbgrader's code
    assert not graded["connected"] and graded["left"] == ""
    assert _score(graded["by"]["ada_full"]) == 10  # the gradebook edit did not land


def test_changed_cell_metadata_is_put_back_and_costs_no_one_anything(graded):
    rows = graded["by"]["relabelled"]
    assert {r["grade_id"]: float(r["max_score"]) for r in rows} == {
        "test_square_grad": 2, "test_sum_squared_grad": 2, "test_train_step": 3, "test_fit_line": 3}
    assert rows[0]["failed_steps"] == "" and "put back as released" in rows[0]["notes"]


def test_symbolic_links_are_never_followed(graded):
    [row] = {r["problem"] for r in graded["by"]["symlinks"]}
    assert "a symbolic link, not a file" in row
    assert not list((graded["out"] / "feedback").rglob("notes.txt"))


def test_huge_display_output_is_cut_before_it_reaches_any_file(graded):
    out = graded["out"]
    for student in ("flood", "metadata_flood"):
        for path in [*(out / "autograded" / student).rglob("*"), *(out / "feedback" / student).rglob("*")]:
            assert path.is_dir() or path.stat().st_size < 5_000_000, path


def test_odd_names_and_terminal_escapes_reach_the_reports_escaped(graded):
    summary = (graded["out"] / "summary.txt").read_text()
    assert "bad\\xffname" in summary and "\x1b" not in summary
    assert "\x1b" not in graded["proc"].stdout
    message = graded["by"]["terminal_escapes"][0]["message"]
    assert "\x1b" not in message and "all clear" not in message and "raised ValueError" in message


@pytest.mark.parametrize("student", ["keep_inputs", "display_update"])
def test_inputs_a_function_kept_reach_no_feedback(graded, student):
    [page] = (graded["out"] / "feedback" / student).rglob("*.html")
    text = page.read_text()
    assert not re.search(r"SEEN \[[^\]]", text) and "10.25" not in text  # [] before the tests


def test_an_exception_type_named_by_the_student_reaches_no_report(graded):
    rows = graded["by"]["type_name"]
    assert not any("input_" in row["message"] for row in rows)
    assert "raised an exception" in " ".join(rows[0]["message"].split())


def test_an_exception_type_named_in_digits_carries_no_hidden_input(graded):
    [row] = [r for r in graded["by"]["digits_type"] if r["grade_id"] == "test_square_grad"]
    message = " ".join(row["message"].split())
    assert float(row["score"]) == 0 and "4000" not in message
    assert "raised an exception (its type is not shown for a hidden case)" in message
    [page] = (graded["out"] / "feedback" / "digits_type").rglob("*.html")
    text = re.sub(r"(?s)<style.*?</style>", "", page.read_text())  # CSS has colours like #E40000
    assert not re.search(r"\b4000\b", text) and "not shown for a hidden case" in " ".join(text.split())


def test_a_builtin_exception_chosen_by_a_hidden_input_is_not_named(graded):
    [row] = [r for r in graded["by"]["builtin_type_choice"] if r["grade_id"] == "test_square_grad"]
    message = " ".join(row["message"].split())
    assert "not shown for a hidden case" in message and "Error" not in message.split("raised")[-1]


def test_hidden_tests_reach_no_output_and_no_feedback(graded):
    out = graded["out"]
    for path in [*(out / "autograded").rglob("*.ipynb"), *(out / "feedback").rglob("*.html")]:
        text = path.read_text()
        if path.suffix == ".ipynb":
            nb = nbformat.reads(text, as_version=4)
            text = "".join(str(c.get("outputs", "")) for c in nb.cells)
        assert HIDDEN_LINE not in text, path
