# Root pytest configuration: shared by tests/ and by nbval's run of solutions/.
import os

# Kernels started by nbval and by the grading tests inherit these: fast mode (fewer repeats and
# epochs) and TensorFlow's C++ log off.
os.environ.setdefault("WORKBOOK_FAST", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Sample submissions are graded by tests/test_grading_samples.py, not executed by nbval.
collect_ignore_glob = ["tests/samples/*", "tests/robustness/*", "grading-output/*", "grading-demo/*",
                       "build/*", ".venv/*"]

# The test files that grade whole classes, longest first (seconds on 2 cores, 2026-12-04), run
# first: pytest-xdist (--dist loadfile) gives each of its two processes one file to start with,
# then the next file in this order to a process as soon as it has at most 2 tests left. Started
# first, the sample class's file (the longest by far) ends about when the short files do.
SLOWEST_FIRST = ["tests/test_grading_samples.py",      # ~590 s: the sample class, then its demos
                 "tests/test_grading_robustness.py",   # ~190 s
                 "tests/test_grading_tamper.py",       # ~110 s
                 "tests/test_grading_isolation.py",    # ~75 s
                 "tests/test_submissions.py",          # ~75 s
                 "tests/test_kernel_limits.py",        # ~55 s
                 "tests/test_exchange.py"]             # ~55 s


def pytest_collection_modifyitems(session, config, items):
    """Under pytest-xdist, put the files of :data:`SLOWEST_FIRST` first, in that order (the rest
    keep theirs); in one process the order stays the files' own."""
    if not getattr(config.option, "numprocesses", None):
        return
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
