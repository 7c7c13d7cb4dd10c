# based on: ada_full
# p08_wrong_predictions: the code of every exercise is ada_full's (right); the prediction of
# grads_from_one_tape is what the draft gives once both of its bugs are fixed, not once the tape
# is made persistent (the unwatched constant still gives None: M01); that exercise gets 0.

# %% grads_from_one_tape
predicted_dz_dx = 108.0
predicted_dy_dx = 6.0


def grads_from_one_tape(x):
    x = tf.constant(x, dtype=tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    dz_dx = tape.gradient(z, x)
    dy_dx = tape.gradient(y, x)
    del tape
    return dz_dx, dy_dx
