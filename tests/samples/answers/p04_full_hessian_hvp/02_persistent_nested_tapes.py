# based on: ada_full
# p04_full_hessian_hvp: the answers below replace ada_full's; every other answer cell is ada_full's.
# hvp gets the right numbers by building the full Hessian with nested tapes and multiplying it by
# v: the idea (H v without H) is missing, M45.

# %% hvp
predicted_hessian_mb = 4.0
predicted_hvp_mb = 0.004
predicted_hvps_per_hessian = 1000


def hvp(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return tf.linalg.matvec(outer.jacobian(g, x), v)
