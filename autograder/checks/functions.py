"""The real ``tf.function``, captured when the checks are imported, before any student code runs.

A check reads a student's tf.function (its traces, its concrete functions, its Python body) only
through what this module captured: TensorFlow's own ``Function`` type and the unbound functions
of that type, and ``tf.config``'s eager switch. An object of the student's that answers
``isinstance(fn, tf.types.experimental.PolymorphicFunction)`` (a subclass, or a class with
methods of the same names), or a method or attribute set on the object or its class later, does
not change what the checks read (M87).
"""
from __future__ import annotations

import types

import tensorflow as tf
from tensorflow.python.eager.polymorphic_function import concrete_function as _concrete_function

__all__ = ["FUNCTION_TYPE", "CONCRETE_TYPE", "real_function", "is_tf_function",
           "is_posing", "tracing_count", "concrete_function", "python_function",
           "input_signature", "call_function", "functions_run_eagerly",
           "run_functions_eagerly", "executing_eagerly",
           "eager_by_the_switch"]

#: TensorFlow's tf.function type (``polymorphic_function.Function``) and its concrete function's.
#: Nothing is traced here: a kernel may fork after importing the checks (warm kernels).
FUNCTION_TYPE = type(tf.function(lambda: None))
CONCRETE_TYPE = _concrete_function.ConcreteFunction

_CALL = FUNCTION_TYPE.__call__
_TRACING_COUNT = FUNCTION_TYPE.experimental_get_tracing_count
_GET_CONCRETE = FUNCTION_TYPE.get_concrete_function
_PYTHON_FUNCTION = FUNCTION_TYPE.python_function.fget
_INPUT_SIGNATURE = FUNCTION_TYPE.input_signature.fget
#: tf.config's eager switch, as TensorFlow defines it.
functions_run_eagerly = tf.config.functions_run_eagerly
run_functions_eagerly = tf.config.run_functions_eagerly
#: Whether the code running now runs eagerly (TensorFlow's function).
executing_eagerly = tf.executing_eagerly


def eager_by_the_switch() -> bool:
    """Whether the code running now runs eagerly because tf.config's switch is on: a
    tf.function's body reached some other way (its Python function called, a ``__call__``
    patched) runs eagerly with the switch off."""
    return bool(executing_eagerly()) and bool(functions_run_eagerly())


def real_function(fn):
    """The TensorFlow ``Function`` object ``fn`` is: ``fn`` itself when its type is exactly
    :data:`FUNCTION_TYPE` (a decorated function or method, as ``tf.function`` returns it), the
    Function under a bound method (``types.MethodType`` of one); None for anything else."""
    if type(fn) is FUNCTION_TYPE:
        return fn
    if type(fn) is types.MethodType and type(fn.__func__) is FUNCTION_TYPE:
        return fn.__func__
    return None


def is_tf_function(fn) -> bool:
    """True when ``fn`` is a tf.function TensorFlow made (:func:`real_function`)."""
    return real_function(fn) is not None


def is_posing(fn) -> bool:
    """True when ``fn`` answers isinstance for a tf.function (or a concrete function) but is not
    one TensorFlow made: a subclass of its types, or an object of the student's (M87)."""
    return not is_tf_function(fn) and isinstance(
        fn, (tf.types.experimental.PolymorphicFunction, tf.types.experimental.ConcreteFunction)
    ) and type(fn) is not CONCRETE_TYPE


def tracing_count(fn) -> int:
    """How often the tf.function ``fn`` has traced, read by TensorFlow's own method."""
    return _TRACING_COUNT(real_function(fn))


def concrete_function(fn, *args, **kwargs):
    """``fn.get_concrete_function(*args, **kwargs)``, by TensorFlow's own method (the bound
    method's object comes first, as calling it would pass it)."""
    real = real_function(fn)
    if real is not fn:  # a types.MethodType over a Function: its instance is the first argument
        args = (fn.__self__, *args)
    return _GET_CONCRETE(real, *args, **kwargs)


def python_function(fn):
    """The Python function under the tf.function ``fn`` (TensorFlow's property), or ``fn``
    itself when it is not a tf.function."""
    real = real_function(fn)
    if real is None:
        return fn
    body = _PYTHON_FUNCTION(real)
    return types.MethodType(body, fn.__self__) if real is not fn else body


def input_signature(fn):
    """The input_signature of the tf.function ``fn`` (TensorFlow's property)."""
    return _INPUT_SIGNATURE(real_function(fn))


def call_function(fn, *args, **kwargs):
    """Call ``fn``: a tf.function by TensorFlow's own ``__call__`` (a patched one is not
    used), anything else as it is."""
    real = real_function(fn)
    if real is None:
        return fn(*args, **kwargs)
    if real is not fn:
        args = (fn.__self__, *args)
    return _CALL(real, *args, **kwargs)
