# based on: ada_full
# p08_wrong_predictions: the code of every exercise is ada_full's (right); the prediction is the
# one a student who reads the graph as Python makes: the call with 2.0 takes the positive branch
# and works (M36).

# %% predict_draft
predicted_runs = [True, True, False]
