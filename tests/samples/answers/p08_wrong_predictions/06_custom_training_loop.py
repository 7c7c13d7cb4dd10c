# based on: ada_full
# p08_wrong_predictions: the code of every exercise is ada_full's (right); the predictions are
# the ones a student who skipped the explanations makes: a pipeline's batches regrouped after
# batch, float32 from NumPy, one trace per input shape; both exercises with predictions get 0.

# %% predict_pipeline
predicted_dtype = "float32"
predicted_same_groups = False

# %% predict_train_step
predicted_traces = 2
predicted_iterations = 120
