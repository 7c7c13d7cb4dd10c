# based on: ada_full
# p02_inner_gradient_outside: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% second_derivative
def second_derivative(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    dy_dx = inner.gradient(y, x)
    d2y_dx2 = outer.gradient(dy_dx, x)
    return dy_dx, d2y_dx2

# %% hessian
def hessian(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    g = inner.gradient(y, x)
    return outer.jacobian(g, x)
