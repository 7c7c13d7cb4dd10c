"""The grader's door into a kernel (autograder/grading/preprocessors/door.py), in this process:
pinned from a namespace no student code has touched, then found and checked while a
namespace and an interpreter are changed the ways a notebook can change them. Each route is
undone after its test. The same routes through real grading kernels are in
tests/test_grading_tamper.py."""
import builtins
import gc
import sys
import types
import uuid

import pytest

from autograder.grading.preprocessors import door, probe

PROBE = ("def probe(*args):\n    sys = dict(PINNED)['sys']\n"
         "    return {'len': len([1, 2]), 'sys': sys.version, 'args': list(args)}\n")


@pytest.fixture
def pinned():
    """A door pinned in a fresh namespace (without the course's entry: no TensorFlow here), the
    namespace, and the door class; the door's holder is removed afterwards."""
    token = f"_grader_{uuid.uuid4().hex}"
    namespace = {}
    pin = eval(door.pin_expression(token, False), namespace)
    yield pin, namespace, vars(builtins)[token + "_door"]
    vars(builtins).pop(token + "_door", None)


def _probe(pin, namespace, source=PROBE):
    """What the door's integrity-check function answers, read as the grader reads it."""
    value = eval(door.through(pin, "probe", f"{source!r}, (1, 'two')"), namespace)
    return door.read(pin, "probe", {"status": "ok", "data": {"text/plain": repr(value)}})


def test_the_pinned_door_answers_through_its_address(pinned):
    pin, namespace, _ = pinned
    assert _probe(pin, namespace) == {"len": 2, "sys": sys.version, "args": [1, "two"]}


def test_names_the_notebook_defines_decide_nothing(pinned):
    pin, namespace, _ = pinned
    namespace.update({"exec": lambda *a: None, "object": int, "hash": lambda x: 0,
                      "__import__": None, "len": lambda x: 42, "eval": None})
    assert _probe(pin, namespace)["len"] == 2


def test_builtins_and_sys_modules_changed_after_the_pin_reach_no_answer(pinned, monkeypatch):
    pin, namespace, _ = pinned
    monkeypatch.setattr(builtins, "len", lambda x: 42)
    monkeypatch.setattr(builtins, "exec", lambda *a, **k: None)
    fake = types.ModuleType("sys")
    fake.version = "forged"
    monkeypatch.setitem(sys.modules, "sys", fake)
    assert _probe(pin, namespace)[("len")] == 2
    monkeypatch.undo()
    assert _probe(pin, namespace)["sys"] == sys.version


def test_a_class_posing_as_the_door_is_not_found(pinned):
    pin, namespace, real = pinned
    real.__qualname__ = real.__name__ = "Renamed"
    posing = type("Door", (), {"__module__": real.__module__, "probe": lambda *a: "forged"})
    assert posing.__qualname__ == "Door" and _probe(pin, namespace)["len"] == 2


@pytest.mark.parametrize("change,named", [
    (lambda d: setattr(d, "probe", lambda source, args: {"changed": [], "checks": []}),
     "the door's function to the integrity check"),
    (lambda d: setattr(vars(d)["probe"], "__code__", (lambda source, args, _e=exec, _d=dict, _b=(),
                                                       _p=(): {"changed": [], "checks": []}).__code__),
     "that function's code"),
    (lambda d: setattr(vars(d)["probe"], "__defaults__",
                       (lambda source, ns: ns.update(probe=lambda *a: {"changed": [], "checks": []}),)
                       + vars(d)["probe"].__defaults__[1:]),
     "that function's default arguments"),
])
def test_a_door_changed_after_the_pin_is_refused_with_what_changed(pinned, change, named):
    pin, namespace, real = pinned
    change(real)
    with pytest.raises(door.Altered, match=named):
        _probe(pin, namespace)


def test_a_door_cannot_change_its_class():
    class Other:
        pass

    holder = type("Door", (), {})
    with pytest.raises(TypeError):
        holder.__class__ = Other


def test_a_door_whose_holder_is_deleted_is_gone():
    token, namespace = f"_grader_{uuid.uuid4().hex}", {}
    pin = eval(door.pin_expression(token, False), namespace)
    del vars(builtins)[token + "_door"]
    gc.collect()
    with pytest.raises(IndexError):
        eval(door.through(pin, "probe", f"{PROBE!r}, ()"), namespace)


@pytest.mark.parametrize("text", [
    None, "", "(1, 2)", "((7, 8, 9), 'x') + 1", "((" + "(" * 100_000, "x" * (11 * 2 ** 20),
])
def test_an_answer_of_another_form_is_refused(text):
    pin = {"door": 1, "observe": (), "probe": (7, 8, 9)}
    with pytest.raises(ValueError):
        door.read(pin, "probe", {"status": "ok", "data": {"text/plain": text}})


def test_the_request_expression_looks_up_no_name():
    """Every name the expression reads is a lambda's parameter or a comprehension's variable:
    compiled, it loads no global (which a notebook could define)."""
    pin = {"door": 12345, "observe": (0,) * 6, "probe": (0,) * 3}
    for route in ("observe", "probe"):
        code = compile(door.through(pin, route, "1, 2"), "<request>", "eval")
        loads = set()
        stack = [code]
        while stack:
            item = stack.pop()
            loads |= {i.argval for i in __import__("dis").get_instructions(item)
                      if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
            stack += [c for c in item.co_consts if isinstance(c, types.CodeType)]
        assert loads == set(), (route, loads)


def test_the_record_is_plain_data_only_with_exact_types_at_any_depth():
    plain = probe.kernel_half()["_plain"]

    class Same(str):
        def __eq__(self, other):
            return True
        __hash__ = str.__hash__

    state = {"a": [(1, "x", None, True)] * 3, "b": {"c": [[("d", 2)]]}}
    assert plain(state)
    assert not plain({"a": [(1, Same("x"))]})
    assert not plain({"b": {"c": [[("d", 2.5)]]}})
    assert not plain({Same("key"): 1})


def test_a_file_name_posing_as_one_already_resolved_is_resolved_itself(tmp_path):
    # The check resolves each file name once; a str subclass that hashes and compares like a
    # trusted path must not be answered with that path.
    real = probe.kernel_half()["_realpath"]
    trusted = str(tmp_path / "trusted.py")
    assert real(trusted) == trusted

    class Posing(str):
        def __eq__(self, other):
            return True

        def __hash__(self):
            return hash(trusted)

    assert real(Posing(str(tmp_path / "elsewhere.py"))) == str(tmp_path / "elsewhere.py")
