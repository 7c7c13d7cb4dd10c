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
            "when told to", "tell the tape to watch the constant (read GradientTape.watch), "
                            "inside the with block"),
    "M02": ("integer input to the tape",
            "None (and a warning): only floating-point tensors have gradients",
            "make the input float32"),
    "M03": ("variable replaced by a tensor",
            "w = w - lr * g makes w a plain tensor; the next tape does not watch it",
            "update the variable in place (read tf.Variable's assign_sub), so it stays the "
            "variable the tape watches"),
    "M04": ("gradient called twice on a non-persistent tape",
            "RuntimeError: the tape freed what it recorded after the first call",
            "a persistent tape for several gradient calls (read GradientTape's persistent "
            "argument), released once done"),
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
            "TensorArray.write returns a new TensorArray: keep what it returns"),
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
            "a tf.TensorArray (its write returns the new array to keep), or a running tensor total"),
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
            "switch tf.config.run_functions_eagerly back off once debugging is done"),
    "M20": ("integer tensor mixed with float tensors",
            "tf.Variable(0) or tf.constant(1) is int32; an op with a float32 operand raises "
            "InvalidArgumentError ('expected to be a int32 tensor but is a float tensor')",
            "start from float literals, or give the dtype: one dtype for every operand of an op"),
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
            "a tf.Variable counter, changed in place (read assign_add), and conditions on its "
            "value"),
    "M26": ("a retrace for every Python number",
            "a Python float argument is part of the trace key: each new value traces a new "
            "graph, and TensorFlow warns that calls 'triggered tf.function retracing'",
            "pass tensors, whose values are not part of the trace key, or give the function an "
            "input_signature"),
    "M27": ("target not held fixed",
            "the gradient also flows into a target computed from the same weights (a TD or "
            "target-network target), so the update follows the full gradient",
            "hold the target fixed with tf.stop_gradient around it alone, or compute it while the "
            "tape stops recording (GradientTape.stop_recording)"),
    "M28": ("ops of loops and conditions not counted",
            "graph.get_operations() and graph_def.node list the top-level graph only; loop "
            "bodies and branches are functions of graph_def.library",
            "add the nodes of every function in graph_def.library.function"),
    "M29": ("training data in the same order every epoch",
            "a dataset not shuffled by tf.data (no .shuffle, or the examples permuted once by "
            "NumPy before from_tensor_slices), or shuffled with reshuffle_each_iteration=False, "
            "gives the same order in every epoch",
            "shuffle in tf.data, with a buffer as large as the data, before batching, "
            "reshuffle_each_iteration left at its default True"),
    "M30": ("tf.numpy_function on the differentiated path",
            "tf.numpy_function runs NumPy outside the graph: the function runs and its value is "
            "right, but a tape gets no gradient through it (None)",
            "TensorFlow ops on the tensor itself (tf.math has NumPy's functions), no "
            "tf.numpy_function where a gradient must flow"),
    "M31": ("an f-string of a tensor in tf.print",
            "inside a tf.function an f-string (or str(), format) runs once, while TensorFlow "
            "traces: it formats the symbolic tensor (Tensor(\"x:0\", ...)) into a constant "
            "string, which tf.print then prints on every call instead of the value",
            "pass the tensor to tf.print as an argument of its own, beside the label, not "
            "formatted into a string"),
    "M32": ("one tf.Variable shared by every instance",
            "a tf.Variable made once at module level (or as a class attribute) and used by "
            "every instance avoids the ValueError of a variable made inside a tf.function, "
            "but all instances update the same state: a second object starts where the "
            "first stopped",
            "make the variable per instance, once, in __init__"),
    "M33": ("log(cosh(x)) overflowing float32",
            "cosh(x) exceeds float32's largest value (about 3.4e38) for |x| above about 89: "
            "log(cosh(x)) is then inf and its gradient nan (or 0 just below), although "
            "log(cosh(x)) itself is only about |x| - log 2",
            "an identity whose parts stay finite, e.g. from cosh(x) = e^|x| (1 + e^(-2|x|)) / 2 "
            "with tf.math.softplus or tf.math.log1p, or compute in float64"),
    "M35": ("bytes not decoded as UTF-8",
            "str(b) and repr(b) of a tf.string entry write the bytes with escapes "
            "(b'caf\\xc3\\xa9'), not the text, and an ASCII decoding raises "
            "UnicodeDecodeError: a comparison built on them is right for plain ASCII words only",
            "decode the bytes as UTF-8 before comparing with a str, or compare bytes with bytes"),
    "M36": ("a name set on one path of a tensor if only",
            "AutoGraph makes a tensor if a tf.cond, which traces every branch whatever the "
            "value: ValueError \"'word' must also be initialized in the else branch\" while "
            "tracing, even for an input that takes the branch that sets it",
            "set the name on every path (an else branch), or before the if"),
    "M37": ("a loop variable whose shape or dtype changes",
            "tf.while_loop needs each loop variable to keep its shape and dtype: ValueError "
            "\"'history' has shape (1, 2) before the loop, but shape (2, 2) after one "
            "iteration\" while tracing",
            "collect rows in a tf.TensorArray, or declare the changing shape as a shape invariant "
            "(read tf.autograph.experimental.set_loop_options); keep one dtype"),
    "M40": ("a tf.data iterator made inside the tf.function",
            "iter(dataset) inside a tf.function is an op of the graph: every call makes a new "
            "iterator, from the start, and next() on it gives the first element every time",
            "make the iterator once, outside the tf.function, and call next() on it inside"),
    "M41": ("a tf.function created inside a loop",
            "@tf.function (or tf.function(f)) inside a loop makes a new function on every "
            "pass, with an empty trace cache: every call traces again",
            "create the tf.function once, before the loop, and pass what changes as tensor "
            "arguments"),
    "M44": ("an update that is not the tape's gradient",
            "the step applied to the weights is written by hand beside a tape.gradient call "
            "whose result it does not use: the tape decides nothing",
            "apply what tape.gradient returned: the update is made from the tape's gradient, not "
            "written beside it"),
    "M45": ("full Hessian built for a Hessian-vector product",
            "a jacobian of the gradient (or one gradient per entry) materialises the n x n "
            "Hessian: n times the memory of H v and about n gradients of time",
            "forward-over-back: the jvp of the tape's gradient, taken inside a "
            "tf.autodiff.ForwardAccumulator whose primal is x and tangent v"),
    "M46": ("another autodiff spelling than the exercise asks",
            "the derivative is correct (forward-over-back where nested tapes are asked, or "
            "back-over-back where forward-over-back is), but the exercise is about the "
            "mechanism it names and says why",
            "use the spelling the exercise names: the check says which and why"),
    "M47": ("model.predict inside the tape",
            "model.predict runs Keras' own loop and returns a NumPy array: the tape records "
            "nothing from the weights to the loss, and every gradient is None",
            "call the model object itself inside the tape, so the tape records the forward pass; "
            "keep predict for inference"),
    "M50": ("a loss computed from probabilities",
            "softmax rounds a probability far below 1e-38 to exactly 0 in float32, so "
            "-log(softmax(logits)) is inf for logits [1000, 0] and its gradient NaN; clipping "
            "the probability instead caps the loss (16.1 where it is 1000)",
            "compute it from the logits: log-sum-exp minus the true logit "
            "(tf.nn.sparse_softmax_cross_entropy_with_logits, tf.nn.log_softmax)"),
    "M51": ("tf.where over a branch whose gradient is inf",
            "tf.where picks a finite value, but the gradient flows through both branches: the "
            "unpicked one's inf times the 0 that tf.where sends it is NaN",
            "the double where: a first tf.where feeds the unsafe op a safe input where it would "
            "blow up, before the outer tf.where; better, a formula with no unsafe branch"),
    "M52": ("a custom gradient that asks autodiff",
            "a backward that opens a tape (or calls tf.gradients, or the op's registered "
            "gradient) over the built-in op returns the built-in gradient, with its "
            "instabilities: the custom gradient replaces nothing",
            "derive the derivative and write its formula in grad_fn, times upstream"),
    "M53": ("exp overflow in a formula",
            "tf.exp(x) is inf in float32 for x > 88.7: log(1 + e^x) becomes inf and "
            "e^x / (1 + e^x) becomes inf / inf = NaN",
            "rewrite the value and the derivative with e^-|x|, which cannot overflow"),
    "M54": ("finite differences instead of a backward pass",
            "(f(w + eps) - f(w - eps)) / (2 eps) approximates a derivative: it is off in the "
            "last digits, wrong next to a kink such as ReLU's, and costs two forward passes per "
            "weight",
            "apply the chain rule node by node, backwards from the loss"),
    "M55": ("an evaluation step that trains",
            "a tape and an update of the weights in the evaluation step (a copy of the train "
            "step): the model changes on validation data, so the validation numbers no longer "
            "measure it, and every evaluation pays a backward pass",
            "measure only: the logits with training=False, the loss and the metrics; no tape, "
            "no update"),
    "M56": ("str() of a tensor in a graph",
            "inside a tf.function str(i) runs once, while tracing, on the symbolic tensor: it "
            "gives its name, 'Tensor(\"while/Placeholder:0\", shape=(), dtype=int32)', written "
            "into the graph as a constant, never the number",
            "convert with an op of the graph (read tf.strings.as_string, or tf.strings.format)"),
    "M57": ("a Python range over a tensor's static length",
            "range(items.shape[0]) or range(len(items)) is a Python loop while the length is "
            "known: the graph holds one copy of the body per item (a new graph for every "
            "length), and for a vector of unknown length shape[0] is None (TypeError)",
            "loop over the tensor itself, or over a tf.range of its dynamic size (tf.size): a "
            "graph loop"),
    "M60": ("a product's gradient times its own factor",
            "for a = x * y the local derivative with respect to x is y, the other factor: "
            "grad_a * x sends each input its own value, and grad_x, grad_y come out swapped",
            "multiply the upstream gradient by the other factor of the product"),
    "M61": ("a gradient not shaped like its variable",
            "a sum over every entry sends its upstream gradient to each entry of its input, so "
            "that gradient is an array shaped like the input; the number 1.0 in its place "
            "broadcasts in arithmetic but is the gradient of no variable of the graph",
            "build it with the input's shape: every entry the upstream gradient"),
    "M64": ("a Hessian reduced to its column sums",
            "outer.gradient(g, x) of the inner tape's gradient g differentiates sum(g): one "
            "number per entry of x, the Hessian's column sums, not the (n, n) matrix",
            "the outer tape's jacobian of g, which keeps one row per entry of g"),
    "M65": ("float64 features in the input pipeline",
            "from_tensor_slices keeps NumPy's float64: the dataset moves twice the bytes, Keras "
            "casts every batch again, and a tf.matmul with a float32 kernel raises "
            "InvalidArgumentError",
            "convert the features to float32 before from_tensor_slices"),
    "M66": ("shuffle after batch",
            ".shuffle after .batch moves whole batches: every epoch the same groups of "
            "neighbouring examples, only in another order",
            "shuffle every example, with a buffer as large as the data, before batching"),
    "M67": ("validation measured on other data",
            "the epoch loop never read val_ds (it evaluated on the training batches): the "
            "validation numbers then measure examples the model learnt from",
            "run the evaluation step on every batch of val_ds after each epoch"),
    "M68": ("metrics not reset every epoch",
            "tf.keras.metrics accumulate until reset_state(): reset never, or once before the "
            "loop, and epoch k's numbers average epochs 1 to k, lagging behind the model",
            "reset_state() on every metric at the start of each epoch"),
    "M69": ("a switch put back to a fixed state",
            "a helper that turns tf.config.run_functions_eagerly on and always turns it off "
            "afterwards also turns off the switch of a caller that had it on: that session runs "
            "as graphs again after the call",
            "read tf.config.functions_run_eagerly() first, and put that value back in finally:"),
    "M70": ("a tf.Variable replaced instead of assigned",
            "a tf.function holds the variable object it captured when it traced; binding the "
            "name to a new tf.Variable later leaves the graph reading the old one",
            "make the variable once and change it in place (read tf.Variable's assign)"),
    "M71": ("a prediction that is not a plain value",
            "a prediction is checked as written: a tensor, a string or a number of the wrong "
            "kind (2.0 for a count) is a measurement or a guess in the wrong form, not the "
            "value the question asks for",
            "write a plain Python value of the kind the prediction cell's comment shows"),
    "M72": ("tf.cond branches that disagree",
            "tf.cond builds one op whose output has one dtype and structure whichever branch "
            "runs: a branch returning the int 0 (int32) beside a float32 x * x raises TypeError "
            "('true_fn and false_fn arguments to tf.cond must have the same number, type, and "
            "overall structure'), and branches of different shapes leave the output's shape "
            "unknown",
            "return the same dtype and shape from both branches (a float literal, or a tensor "
            "made from x)"),
    "M73": ("an input_signature that refuses the inputs it must serve",
            "a tf.function with an input_signature binds every call to its specs: an input of "
            "another length (a fixed dimension, shape=[3]) or another dtype raises TypeError "
            "('Binding inputs to tf.function failed ... Can not cast TensorSpec')",
            "write None for each dimension that varies between calls, and the dtype the inputs "
            "have"),
    "M74": ("an input_signature of any shape where one rank is meant",
            "tf.TensorSpec(shape=None) accepts a scalar, a vector or a matrix alike: one trace, "
            "but the signature says nothing about the rank, so a caller's matrix is answered "
            "instead of refused",
            "give the spec the rank the inputs have, leaving free only the dimensions that vary"),
    "M75": ("a retrace for every new input shape",
            "a tf.function without an input_signature traces a graph per input shape "
            "(reduce_retracing=True traces once more, to generalise the shape): a function fed "
            "batches of changing length traces on several calls, and again when the rank "
            "changes",
            "declare the shape the calls share in an input_signature"),
    "M76": ("a return or break on a tensor condition inside a Python loop",
            "a for over a Python list runs while tracing (the loop is unrolled), so it cannot "
            "stop early on a value known only when the graph runs: AutoGraph raises ValueError "
            "'the else branch must also have a return statement' for a return, "
            "NotImplementedError 'break and return statements which depend on a TF condition "
            "are not supported in Python for loops' for a break",
            "let the tensor if in the loop set a value and return once, after the loop, or loop "
            "over a tensor (a graph loop) instead"),
    "M77": ("a Python loop over a fixed count",
            "a Python range over a fixed number (range(64) over a padded copy, or that many "
            "tf.conds) is unrolled while tracing: the graph holds that many copies of the body, "
            "right for inputs up to that length and wrong past it",
            "loop in the graph over every item: over the tensor itself or a tf.range of its "
            "dynamic size, or a vector op with no loop"),
    "M80": ("fn.python_function called to debug eagerly",
            "python_function is the Python body under one tf.function's decorator: called, it "
            "runs that body eagerly, but every tf.function it calls still traces and runs as a "
            "graph, where .numpy() and print of a value fail",
            "turn tf.config.run_functions_eagerly on around the call (and put the switch back "
            "as it was), which reaches every tf.function the call runs"),
    "M85": ("a squashed output where logits are expected",
            "a softmax (or sigmoid, tanh) last layer gives squashed values, not logits. Keras "
            "3's from_logits=True loss, given that layer's output tensor itself, recovers the "
            "logits the layer kept and warns; everything else that takes the outputs as logits "
            "(tf.nn's losses, any op in between, a metric from log_softmax, a caller of the "
            "exported model) applies a second, nearly flat softmax, so even right and certain "
            "outputs cost 1.46 for 10 classes instead of 0",
            "end the model with logits: a last Dense layer with no activation; the loss applies "
            "the softmax"),
    "M86": ("a final model below the accuracy asked",
            "training ran and the model is the notebook's network, but it classifies too few "
            "held-out digits: too few epochs, or a learning rate too small to get there (or "
            "too large to settle)",
            "read the training curves: a loss still falling wants more epochs (within the "
            "budget), one that stalls or jumps another learning rate; choose by the validation "
            "accuracy, never the test set"),
    "M87": ("an object posing as a tf.function",
            "a subclass of tf.types.experimental.PolymorphicFunction, or a class with its "
            "methods (__call__, get_concrete_function, experimental_get_tracing_count), answers "
            "isinstance but reports traces and graphs of its own making: TensorFlow traced "
            "nothing of it",
            "return the object tf.function itself makes (called or as a decorator), unchanged"),
    "M88": ("a loss averaged per replica",
            "under a distribution strategy each replica sees its share of the batch, and the "
            "replicas' gradients are summed when they are applied: a loss that is each "
            "replica's own mean gives gradients the number of replicas times too large, and a "
            "count of replicas divided out by hand is wrong for another number of replicas or "
            "for shares of different sizes",
            "scale each replica's loss by the global batch, not its own share (read "
            "tf.nn.compute_average_loss and its global_batch_size)"),
    "M89": ("a resume without the optimizer",
            "a checkpoint of the model alone restores the weights, while the fresh optimizer "
            "starts at step 0: its learning-rate schedule restarts from the first rate and its "
            "momentum from zero (its step count set by hand brings back the rate, not the "
            "momentum)",
            "put the optimizer itself in the checkpoint beside the model: its step count and "
            "slots are its state"),
    "M90": ("a resume that restarts the data",
            "a fresh dataset iterator starts at the first batch: the resumed run trains again "
            "on the batches before the stop and never reaches the ones after it",
            "put the data iterator in the checkpoint too (a tf.data iterator is trackable), so "
            "the resumed run goes on from the next batch"),
    "M91": ("per-tensor clipping where the global norm was meant",
            "clipping each gradient by its own norm scales each tensor by its own factor, so "
            "the update turns; only one factor for all tensors keeps its direction",
            "clip by the norm of all gradients together (read tf.clip_by_global_norm, or the "
            "optimizer's global_clipnorm)"),
    "M92": ("a serving function without an input signature",
            "a SavedModel keeps the concrete functions traced before saving, never the Python "
            "code: after loading, an input of a shape not traced finds no matching function "
            "(ValueError)",
            "give the serving tf.function an input_signature whose free dimensions are None, "
            "so that one concrete function serves every batch size"),
    "M93": ("float16 gradients without loss scaling",
            "under a mixed_float16 policy the gradients flow back through float16 operations, "
            "whose smallest positive number is about 6e-8: smaller gradients become 0 and "
            "those weights stop learning, without an error",
            "scale the loss up before the gradient and the gradients back down before the "
            "update (read Keras 3's LossScaleOptimizer and its scale_loss)"),
    "M94": ("the gradient norm logged after clipping",
            "the norm of clipped gradients is never above the clip norm, so a training log of it "
            "stays flat through the batch that made the loss explode: the log hides what it was "
            "kept to show",
            "log the norm before clipping (tf.clip_by_global_norm returns it beside the clipped "
            "gradients)"),
    "M95": ("every gradient scaled to the clip norm",
            "dividing the gradients by their norm and multiplying by the clip norm makes every "
            "step that long, so a small gradient is blown up to the bound: clipping is a bound, "
            "not a normalization",
            "scale by min(1, clip_norm / norm), which leaves gradients below the bound as they "
            "are (read tf.clip_by_global_norm)"),
    "M96": ("tf.Variable created inside the training loop",
            "each step makes new variables at their initial value, so every step computes the "
            "first step's loss and its update is thrown away with the variables; nothing "
            "raises, the loss just never falls",
            "create the variables once, before the loop, and update the same ones in place"),
    "M97": ("metrics reset inside the train step",
            "reset_state() at every step leaves each metric holding the last batch alone: the "
            "epoch's loss and accuracy in the log are one batch's, plausible and wrong",
            "reset the metrics once per epoch, in the loop, and only update them in the step"),
    "M98": ("a Python value in a checkpoint",
            "tf.train.Checkpoint tracks objects that TensorFlow can save (models, optimizers, "
            "iterators, tf.Variables); a plain Python object, int or float given to it raises",
            "name each trackable piece of the state the run needs; a Python number the run "
            "needs goes in a tf.Variable"),
    "M99": ("the value differentiated again where its derivative was meant",
            "outer.gradient(y, x) with nested tapes gives dy/dx a second time: the outer tape "
            "differentiates the target it is given, and y is f itself",
            "ask the outer tape for the gradient of the first derivative (the inner tape's "
            "result)"),
    "M100": ("the inner gradient computed while the outer tape was paused",
             "under outer.stop_recording() the outer tape records nothing, so it has no path "
             "from the first derivative back to x: its gradient is None",
             "compute the inner gradient inside the outer block, where the outer tape records"),
    "M101": ("the jvp of the function where the jvp of its gradient was meant",
             "acc.jvp(y) of a scalar f is its derivative along the tangent, grad f . v: one "
             "number, not the Hessian-vector product",
             "take the accumulator's jvp of the gradient the tape computed inside its block"),
    "M102": ("a graph's library functions counted, not their ops",
             "graph_def.library.function holds one FunctionDef per loop condition, loop body "
             "and branch; each is a graph of its own with many nodes",
             "count the nodes inside each function of the library, as the top-level graph's "
             "nodes are counted"),
    "M103": ("a variable's shape fixed by its first value",
             "tf.Variable(value) takes value's shape for good; assign of a value of another "
             "shape raises ValueError (Shape mismatch)",
             "make the variable with a shape left open (tf.Variable's shape argument), so that "
             "assign takes a value of any shape"),
    "M104": ("a table of rules written out instead of applied",
             "a classifier that spells out the notebook's comparisons gives the notebook's "
             "words for any table it is given: the design asked for applies the table",
             "build one branch per rule of the table the function is given"),
    "M105": ("the last rule that holds wins where the first should",
             "with one `if` per rule that sets the word, each rule that holds overwrites the "
             "ones before it, so overlapping rules give the last one's word",
             "apply the rules in reverse order, or let a rule set the word only where no "
             "earlier rule held"),
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
