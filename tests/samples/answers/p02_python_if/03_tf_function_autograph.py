# based on: ada_full
# p02_python_if: the answers below replace ada_full's; every other answer cell is ada_full's.

# %% predict_if_error
predicted_if_error = None  # expects the graph to return 2.0, as eagerly

# %% square_if_positive
@tf.function(autograph=False)
def square_if_positive(x):
    """x * x if x > 0, else 0.0: the draft's Python if, kept."""
    if x > 0:
        return x * x
    return 0.0
