# based on: ada_full
# p03_one_source_watched: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% product_grads
predicted_none = [[False, False], [False, True], [True, True], [True, False]]


def product_grads(a, b):
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * b
    return tape.gradient(y, [a, b])

# %% hessian
def hessian(f, x):
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.jacobian(g, x)
