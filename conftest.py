# Root pytest configuration: shared by tests/ and by nbval's run of solutions/.
import os

# Kernels started by nbval and by the grading tests inherit these: fast mode (fewer repeats and
# epochs) and TensorFlow's C++ log off.
os.environ.setdefault("WORKBOOK_FAST", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Sample submissions are graded by tests/test_grading_samples.py, not executed by nbval.
collect_ignore_glob = ["tests/samples/*", "tests/robustness/*", "grading-output/*", "grading-demo/*",
                       "build/*", ".venv/*"]
