"""Plain data: what a grading kernel may send the grader, and how the grader reads it.

A check's kernel half (its ``collect`` function) observes the student's code and returns
Python values, tensors and arrays; :func:`encode` turns them into JSON-able data, :func:`dumps`
into text of bounded size. The grader reads that text with :func:`loads`, which trusts nothing:
size, nesting depth, dtypes, keys and kinds are checked, and anything else raises
:class:`Malformed`. Never pickles, never objects: numbers, strings, bytes, lists, dicts of str
keys, and arrays of numbers, bools or bytes.

This module needs only NumPy, so the grader imports it without TensorFlow.

Encoding (JSON):
    ``null``, ``true``/``false``, numbers, strings, lists: themselves (tuples become lists);
    ``{"t": "array", "dtype": "float32", "shape": [2, 2], "data": [[...], ...]}``: an array or a
    tensor (anything with ``.numpy()``), NumPy scalars included (shape ``[]``); dtype ``bytes``
    holds base64 strings;
    ``{"t": "bytes", "b64": "..."}``: a bytes value;
    ``{"t": "dict", "items": {...}}``: a dict with str keys;
    ``{"t": "object", "type": "Dense"}``: anything else, by its type's name.
"""
from __future__ import annotations

import base64
import json
import math
import re

import numpy as np

__all__ = ["encode", "decode", "dumps", "loads", "roundtrip", "Malformed", "PlainObject",
           "MAX_BYTES", "MAX_DEPTH"]

#: Longest text a kernel may send for one graded call, in bytes (4 MiB).
MAX_BYTES = 4 * 1024 * 1024
#: Deepest nesting of lists and dicts the grader reads.
MAX_DEPTH = 24
#: Array dtypes that travel; nothing else is decoded.
DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
          "uint16", "uint32", "uint64", "bool", "bytes", "str")
#: What a dict key or a type name may look like.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ .:'()/\-]{0,63}")


class Malformed(ValueError):
    """The text is not plain data of this module's form (too large, too deep, unknown kind)."""


class PlainObject:
    """Stands for a value that is not plain data, e.g. a Keras model: only its type's name."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, PlainObject) and other.type_name == self.type_name


def _type_name(value) -> str:
    name = type(value).__name__
    return name if NAME.fullmatch(name) else "object"


def encode(value, _depth: int = 0):
    """``value`` as JSON-able data (see the module's docstring); tensors and ``tf.Variable``
    through ``.numpy()``. Raises Malformed past :data:`MAX_DEPTH`."""
    if _depth > MAX_DEPTH:
        raise Malformed("nested too deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):  # JSON has no NaN or infinity: a float64 array stands in
        return value if math.isfinite(value) else _encode_array(np.asarray(value))
    if isinstance(value, (bytes, bytearray)):
        return {"t": "bytes", "b64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [encode(item, _depth + 1) for item in value]
    if isinstance(value, dict):
        return {"t": "dict", "items": {str(k): encode(v, _depth + 1) for k, v in value.items()}}
    if hasattr(value, "numpy") and callable(value.numpy):
        try:
            value = value.numpy()
        except Exception:
            return {"t": "object", "type": _type_name(value)}
    if isinstance(value, (np.ndarray, np.generic)):
        return _encode_array(np.asarray(value))
    return {"t": "object", "type": _type_name(value)}


def _encode_array(array: np.ndarray) -> dict:
    if array.dtype.kind in "SO" and all(isinstance(v, (bytes, np.bytes_)) for v in array.flat):
        data = np.vectorize(lambda b: base64.b64encode(bytes(b)).decode("ascii"),
                            otypes=[object])(array) if array.size else array.astype(object)
        return {"t": "array", "dtype": "bytes", "shape": list(array.shape), "data": data.tolist()}
    if array.dtype.kind == "U":
        return {"t": "array", "dtype": "str", "shape": list(array.shape), "data": array.tolist()}
    if str(array.dtype) not in DTYPES:
        return {"t": "object", "type": f"array of {_type_name(array.dtype)}"}
    data = array.tolist()
    if array.dtype.kind == "f":  # JSON has no NaN or infinity: strings stand for them
        data = _floats_out(data)
    return {"t": "array", "dtype": str(array.dtype), "shape": list(array.shape), "data": data}


def _floats_out(data):
    if isinstance(data, list):
        return [_floats_out(v) for v in data]
    return data if math.isfinite(data) else repr(data)


def _floats_in(data):
    if isinstance(data, list):
        return [_floats_in(v) for v in data]
    if isinstance(data, str) and data in ("nan", "inf", "-inf"):
        return float(data)
    if isinstance(data, (int, float)):
        return data
    raise Malformed("an array entry is not a number")


def dumps(value, max_bytes: int = MAX_BYTES) -> str:
    """``encode(value)`` as compact JSON text; raises Malformed when longer than ``max_bytes``."""
    text = json.dumps(encode(value), separators=(",", ":"), allow_nan=False)
    if len(text) > max_bytes:
        raise Malformed(f"{len(text):,} bytes, more than {max_bytes:,}")
    return text


def _depth_ok(text: str, limit: int) -> bool:
    """Whether brackets outside strings never nest deeper than ``limit`` (checked before
    ``json.loads``, whose recursion a hostile text could exhaust)."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return False
        elif char in "]}":
            depth -= 1
    return True


def loads(text, max_bytes: int = MAX_BYTES):
    """Read plain data that a kernel sent: JSON text of at most ``max_bytes``, nested at most
    ``2 * MAX_DEPTH + 2`` deep, of this module's form; returns the decoded value.

    Raises:
        Malformed: for anything else (and never another exception).
    """
    if not isinstance(text, str):
        raise Malformed("not text")
    if len(text) > max_bytes:
        raise Malformed(f"{len(text):,} bytes, more than {max_bytes:,}")
    if not _depth_ok(text, 2 * MAX_DEPTH + 2):
        raise Malformed("nested too deep")
    try:
        data = json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(
            Malformed(f"{name} is not JSON")))
    except Malformed:
        raise
    except Exception as error:  # ValueError, RecursionError, int too long, ...
        raise Malformed(f"not JSON ({type(error).__name__})") from None
    return decode(data)


def decode(data, _depth: int = 0):
    """The value that :func:`encode` made ``data`` from: NumPy arrays for arrays, bytes for
    bytes, dicts, lists, :class:`PlainObject` for objects. Raises Malformed for anything else."""
    if _depth > 2 * MAX_DEPTH:
        raise Malformed("nested too deep")
    if data is None or isinstance(data, (bool, str, float)):
        return data
    if isinstance(data, int):
        return data
    if isinstance(data, list):
        return [decode(item, _depth + 1) for item in data]
    if not isinstance(data, dict):
        raise Malformed(f"unknown value of type {type(data).__name__}")
    kind = data.get("t")
    try:
        if kind == "bytes" and set(data) == {"t", "b64"}:
            return base64.b64decode(data["b64"], validate=True)
        if kind == "dict" and set(data) == {"t", "items"} and isinstance(data["items"], dict):
            items = data["items"]
            if not all(NAME.fullmatch(k) for k in items):
                raise Malformed("a dict key of an unexpected form")
            return {k: decode(v, _depth + 1) for k, v in items.items()}
        if kind == "object" and set(data) == {"t", "type"} and isinstance(data["type"], str):
            if not NAME.fullmatch(data["type"]):
                raise Malformed("a type name of an unexpected form")
            return PlainObject(data["type"])
        if kind == "array" and set(data) == {"t", "dtype", "shape", "data"}:
            return _decode_array(data)
    except Malformed:
        raise
    except Exception as error:
        raise Malformed(f"a {kind!s:.20} that cannot be read ({type(error).__name__})") from None
    raise Malformed("an unknown kind of value")


def _decode_array(data: dict) -> np.ndarray:
    dtype, shape = data["dtype"], data["shape"]
    if dtype not in DTYPES:
        raise Malformed("an array of an unknown dtype")
    if not (isinstance(shape, list) and len(shape) <= MAX_DEPTH
            and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n for n in shape)):
        raise Malformed("an array shape of an unexpected form")
    if dtype == "bytes":
        flat = np.asarray(data["data"], dtype=object).reshape(-1)
        if not all(isinstance(v, str) for v in flat):
            raise Malformed("a bytes array entry is not base64")
        array = np.array([base64.b64decode(v, validate=True) for v in flat], dtype=object)
    elif dtype == "str":
        array = np.asarray(data["data"], dtype=str)
    else:
        array = np.asarray(_floats_in(data["data"]), dtype=np.float64 if dtype.startswith(
            "float") else None)
        if array.dtype == object:
            raise Malformed("a ragged array")
        array = array.astype(dtype)
    if array.size != int(np.prod(shape)):
        raise Malformed("an array whose data does not fill its shape")
    return array.reshape(shape)


def roundtrip(value):
    """``loads(dumps(value))``: what the grader would read of ``value``. Visible checks judge
    this, so that a student sees exactly the verdict a graded run gives."""
    return loads(dumps(value))
