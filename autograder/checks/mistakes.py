"""The catalogue of mistakes this course names, in its own words.

Student mistakes (``M`` ids) are what a check says when it recognises one: the id and short name
open the message (``[M01: unwatched tf.constant]``), and the instructor's summary groups failures
by them. Each entry: short name, what TensorFlow does, what the right code does. Grading-pipeline
cases (``G`` ids) are what the grader itself must survive; the pipeline's code and tests cite them.
A test (tests/test_checks_mistakes.py) keeps this table and the code in step: every id the code
names is here, and every ``M`` id here is named by a check.
"""
from __future__ import annotations

#: M id -> (short name, what TensorFlow does, what to do instead).
CATALOGUE = {
    "M01": ("unwatched tf.constant",
            "tape.gradient returns None: a tape follows tf.Variables by itself, constants only "
            "when told to", "tape.watch(x) inside the with block"),
    "M02": ("integer input to the tape",
            "None (and a warning): only floating-point tensors have gradients",
            "make the input float32"),
    "M03": ("variable replaced by a tensor",
            "w = w - lr * g makes w a plain tensor; the next tape does not watch it",
            "update in place: w.assign_sub(lr * g)"),
    "M04": ("gradient called twice on a non-persistent tape",
            "RuntimeError: the tape freed what it recorded after the first call",
            "tf.GradientTape(persistent=True), then del tape"),
    "M05": ("loss computed outside the tape",
            "None: the tape stopped recording when its with block closed",
            "compute everything from the inputs to the loss inside the block"),
    "M06": ("a source the tape never watched",
            "[value, None] with watch_accessed_variables=False",
            "tape.watch every source"),
    "M07": ("tf.Variable created inside a tf.function",
            "ValueError on the first call itself: a tf.function that creates a tf.Variable is "
            "traced twice on its first call, and its second trace may not create one again (nor "
            "may the trace of a later call)",
            "create the variable once, outside, and assign to it inside"),
    "M08": ("Python side effect in a tf.function",
            "a Python print or counter runs once, while tracing",
            "tf.print runs on every call"),
    "M09": ("Python if on a tensor in graph mode",
            "OperatorNotAllowedInGraphError without AutoGraph",
            "AutoGraph's if, or tf.cond"),
    "M10": ("bytes compared with str",
            "b'Fizz' != 'Fizz': tf.string tensors hold bytes",
            "decode the bytes, or compare with bytes"),
    "M11": ("TensorArray.write result dropped",
            "in a graph every entry stays b''",
            "ta = ta.write(i, value)"),
    "M12": ("an op without a gradient in the loss",
            "tf.round, tf.argmax or a cast to an integer dtype cut the gradient: None for every "
            "weight, so the optimizer has nothing to apply",
            "a differentiable loss on the model's float outputs"),
    "M13": ("tf.stop_gradient on the path to the loss",
            "the gradient stops there: None for every weight before it",
            "tf.stop_gradient only around what must stay fixed (a target), never around the "
            "whole path from the weights to the loss"),
    "M14": ("computation left TensorFlow inside the tape",
            "np.* or .numpy() give NumPy values the tape cannot record: None, or an "
            "AttributeError deep inside TensorFlow",
            "only tf.* operations between the sources and the target"),
    "M15": ("Python list filled inside a tf.function loop",
            "a tensor made in the loop body is 'out of scope' outside it",
            "a tf.TensorArray (ta = ta.write(i, v)), or a running tensor total"),
    "M16": (".numpy() or NumPy inside a tf.function",
            "AttributeError or NotImplementedError: a graph's tensors are symbolic, they have no "
            "value while the function is traced",
            "tf.* operations inside it (tf.print to print a value on every call), and .numpy() "
            "only on what the tf.function returned"),
    "M17": ("Python identity test on a tensor",
            "x is True, x is None or x == None is decided once, while tracing: the same branch "
            "every call", "compare values with TensorFlow ops: if x > 0"),
    "M18": ("jit_compile=True on code XLA cannot compile",
            "XLA has no kernel for tf.print or string operations: InvalidArgumentError",
            "keep XLA for numeric code: where the exercise keeps jit_compile=True, take tf.print "
            "and string operations out of the function (print its result outside); where the "
            "function must print or make strings, leave jit_compile=True off it"),
    "M19": ("tf.config.run_functions_eagerly(True) left on",
            "every tf.function runs as plain Python: what only happens in graphs disappears",
            "tf.config.run_functions_eagerly(False) once debugging is done"),
    "M20": ("integer tensor mixed with float tensors",
            "tf.Variable(0) or tf.constant(1) is int32; an op with a float32 operand raises "
            "InvalidArgumentError ('expected to be a int32 tensor but is a float tensor')",
            "write float literals: tf.Variable(0.0)"),
    "M21": ("the right numbers without the idea",
            "the values are right, but the mechanism the exercise teaches did not make them (a "
            "derivative written by hand instead of a tape, Keras fit instead of the custom loop)",
            "use the mechanism the exercise names: the check tells which"),
    "M22": ("Python value read once at trace time",
            "a global or free Python variable read inside a tf.function becomes a constant of "
            "the graph when it traces: later changes to it are not seen (until something else "
            "retraces)", "keep changing state in a tf.Variable and assign to it"),
    "M23": ("Python list appended inside a tf.function",
            "list.append (or any change to a Python object) runs while tracing, once per "
            "trace, and stores a graph tensor that has no value outside the graph",
            "return the value and append what the tf.function returned, outside it"),
    "M24": ("Python iterator consumed at trace time",
            "next() on a Python iterator or generator runs once, while tracing: the graph "
            "returns that first value on every call",
            "iterate a tf.data.Dataset: next() on its iterator is an op of the graph"),
    "M25": ("Python counter as a graph's state",
            "self.step += 1 on a Python int runs once, while tracing: the graph keeps that "
            "value, and an if on it is decided once",
            "a tf.Variable counter: self.step.assign_add(1), conditions on its value"),
    "M26": ("a retrace for every Python number",
            "a Python float argument is part of the trace key: each new value traces a new "
            "graph, and TensorFlow warns that calls 'triggered tf.function retracing'",
            "pass tensors (tf.constant(lr)) or give the function an input_signature"),
    "M27": ("target not held fixed",
            "the gradient also flows into a target computed from the same weights (a TD or "
            "target-network target), so the update follows the full gradient",
            "tf.stop_gradient(target), or compute it under tape.stop_recording()"),
    "M28": ("ops of loops and conditions not counted",
            "graph.get_operations() and graph_def.node list the top-level graph only; loop "
            "bodies and branches are functions of graph_def.library",
            "add the nodes of every function in graph_def.library.function"),
    "M29": ("training data in the same order every epoch",
            "a dataset not shuffled by tf.data (no .shuffle, or the examples permuted once by "
            "NumPy before from_tensor_slices), or shuffled with reshuffle_each_iteration=False, "
            "gives the same order in every epoch",
            ".shuffle(len(x)) before .batch, reshuffle_each_iteration left at its default True"),
}

#: M id -> short name, as messages show it.
MISTAKES = {key: entry[0] for key, entry in CATALOGUE.items()}

#: G id -> what the grading pipeline must do with that input.
PIPELINE = {
    "G01": "a cell past the time limit: that exercise 0, 'timed out after N s', the rest graded",
    "G02": "a kernel that dies: tests that did not run never count as passed; the report says so",
    "G03": "a deleted graded test cell: restored from the source and run, max score unchanged",
    "G04": "an edited locked cell, or a test cell turned to markdown: restored, graded, reported",
    "G05": "a file that is not a notebook, or lost nbgrader metadata the release cannot give back: "
           "'not a valid notebook'",
    "G06": "a kernelspec the grader lacks: graded with the course's kernel",
    "G07": "huge outputs: graded; stored output and feedback truncated",
    "G08": "TensorFlow warnings or tf.print on stderr in a test cell: never cost points",
    "G09": "values that differ run to run: compared with tolerances and fixed seeds",
    "G10": "student code run from a source string: AutoGraph needs real kernels or modules",
    "G11": "an answer cell copied with its metadata (a shared grade_id): graded, answer found, noted",
    "G12": "a test cell deleted after a locked check cell: restored, graded, noted",
    "G13": "a cell that prints to the terminal (!echo, os.system): graded normally",
    "G14": "a notebook saved by Colab, VS Code, Notebook 7 or JupyterLab: normalized and graded",
    "G15": "a student folder nbgrader cannot name (kim[2], jane doe): graded under a safe id",
    "G16": "a student's text with nbgrader's markers: made inert when staged, graded, feedback, noted",
    "G17": "a set-up cell that times out: later failures say so, not NameError",
}
