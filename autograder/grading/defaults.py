"""Every limit, name and environment table of the grading pipeline, once.

The kernel-side sources (:mod:`autograder.grading.kernel_side`) run where this package is not
mounted and mirror a few of these values; ``tests/test_grading_layers.py`` checks that they agree.
"""
from __future__ import annotations

import re

# -- names: the course, its folders and files ---------------------------------------------------

# The course id of nbgrader's gradebook and exchange (and the student bundle's top folder).
COURSE_ID = "tf-autodiff-workbook"
# nbgrader's source and release folders, relative to the course root (the repository).
SOURCE_DIR = "solutions"
RELEASE_DIR = "notebooks"
# The SQLite gradebook's file name, in an output folder or a scratch course.
GRADEBOOK_FILE = "gradebook.db"

# -- limits and environment of grading ------------------------------------------------------------

# Per-cell time limit in graded runs, in seconds. Importing TensorFlow and the first trace of a
# tf.function take several seconds on a laptop CPU; the heaviest solution cell (06's training)
# takes about 20 s in fast mode, so 120 s leaves room on a loaded grading machine.
CELL_TIMEOUT_S = 120

# Memory one graded kernel may map, in MiB (TensorFlow alone maps about 2 GiB of address space on
# import; a student's runaway allocation stops here, not at the machine's end).
DEFAULT_MEMORY_LIMIT_MB = 8192

# The smallest memory limit `course grade` accepts, MiB: under less a grading kernel cannot import
# TensorFlow and run the set-up, so every kernel would die (a warm one before it answers: it
# inherits its template's address space) or fail before the first cell. Measured 2026-12-01 (this
# machine: 2 cores, TF 2.21, cgroup v1, the worker's environment), a sandboxed warm kernel and a
# cold one running the set-up cells' imports (the modules preload() of the warm template loads)
# and setup_notebook, then one TensorFlow op, the limit bisected in 32 MiB steps: one kernel at a
# time, the lowest that passed was 2016 (warm) and 2208 (cold), yet 2048-2304 failed in repeats
# (what glibc and TensorFlow map varies from run to run); two at a time, as two workers grade,
# 2304 failed every time (4 of 4, both kinds), 2432 passed 3 of 3 and 2560 7 of 7. With no limit
# a warm kernel maps 2.4 GiB once set up, a cold one 2.3 GiB. 2432 with a margin of 20%, rounded.
MIN_MEMORY_LIMIT_MB = 3072

# No memory limit is None everywhere in Python (a Job, a kernel manager, a cgroup); only the
# command line (--memory-limit-mb 0) and the launcher's argv (kernels.launcher) write it as 0.
# Seconds to wait for a kernel to start (a loaded machine with several workers needs more).
KERNEL_STARTUP_TIMEOUT_S = 120

# The kernel every notebook runs with, whatever kernelspec a submission names (G06).
KERNEL_NAME = "python3"

# Environment of every kernel started by a grading or validation run ("grading mode"), given to
# the kernel at its start by autograder.grading.kernels.managers.GradingKernelManager, never to the process
# that loads this configuration. TF_CPP_MIN_LOG_LEVEL quiets most of TensorFlow's C++ log;
# WORKBOOK_FAST shrinks heavy cells (see utils.fast_mode).
KERNEL_ENV = {
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "WORKBOOK_FAST": "1",
    # Two logical CPU devices in every grading kernel (utils.notebook.LOGICAL_CPUS_ENV): 08's
    # checks run tf.distribute.MirroredStrategy over them. The split must precede TensorFlow's
    # first operation, which a warm kernel runs as soon as it is forked from its template, so
    # no cell can make it there; read from the environment, it is made before that operation,
    # in warm and cold kernels alike, with no code in the template. The other notebooks place
    # every op on /CPU:0 and never see the second device.
    "WORKBOOK_LOGICAL_CPUS": "2",
    "PYTHONWARNINGS": "ignore",
}

# Added to KERNEL_ENV for the kernels that autograde (kernels.managers.LimitedKernelManager and
# its sandboxed subclass, warm or cold): nbgrader's own variable, which its autograder sets to
# "autograde" (its Validate, to "validate") and instructors' notebooks read. A run of the
# solutions (course release) is no autograde and does not get it.
AUTOGRADE_ENV = {"NBGRADER_EXECUTION": "autograde"}

# TensorFlow's own log lines on stderr (C++ absl/glog lines, Python tf logger, CPU feature notice).
# nbgrader scores any stderr in a test cell as 0; these lines are never the student's fault (G08).
TF_LOG_LINE = re.compile(
    r"^(?:[IWEF]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [^\]]+\].*"
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called.*"
    r"|(?:WARNING|INFO|ERROR):tensorflow:.*"
    r"|To enable the following instructions:.*"
    r"|\s*)$"
)

# Longest stored output of one cell, in lines (G07: a tf.print every step for 10^5 steps).
MAX_OUTPUT_LINES = 200

# Output bytes kept, counted as they arrive, for one cell and for one notebook; past them output
# is dropped (thousands of outputs each under nbgrader's cut would otherwise fill the worker).
MAX_CELL_OUTPUT_BYTES = 2_000_000

MAX_NOTEBOOK_OUTPUT_BYTES = 10_000_000

# Largest message the grader receives from a kernel, bytes (ZMQ drops a larger one unread).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

# Cell tag, set when authoring in solutions/, of a cell that only demonstrates (timings, plots,
# subprocess demos, the visible checks that the hidden tests repeat): grading does not run it.
DEMO_TAG = "demo"

# Key of the notebook metadata where GradingExecute leaves what it flagged for review.
REVIEW_KEY = "grading_review"

# Key of a graded cell's metadata set (True) by GradingExecute when the grader decided the cell
# (its outputs are the grader's own words); removed from every cell before grading, so that a
# submission cannot set it.
VERDICT_KEY = "grading_verdict"

# Key of a cell's metadata set (True) by GradingExecute on a demonstration cell it did not run,
# whose one output is then DEMO_NOT_RUN; removed from every cell before grading, as VERDICT_KEY.
DEMO_SKIPPED_KEY = "grading_demo_not_run"
DEMO_NOT_RUN = ("[not run when graded: a demonstration cell, which no grade depends on; run it "
                "in your notebook to see its output]\n")

# Size of the kernel's writable working folder and of its /tmp, in MiB; of its /dev/shm.
WORK_SIZE_MB = 256

SHM_SIZE_MB = 64

# Largest file a kernel may write, MiB, and most processes and threads of its user where no
# cgroup limits each kernel's (TensorFlow starts dozens of threads per kernel; when the grader is
# root, every kernel is nobody, so this one pool is every kernel's).
MAX_FILE_MB = 64

MAX_TASKS = 4096

# Most bytes and entries the kernel's connection folder (on the host's disk) may hold; past
# either, the kernel is killed.
KERNEL_DIR_MAX_BYTES = 4 * 2**20

KERNEL_DIR_MAX_ENTRIES = 64

# Where the kernel works (its current folder and HOME), inside the sandbox, and its matplotlib
# configuration folder there.
WORKDIR = "/home/student"

MPL_CONFIG_DIR = f"{WORKDIR}/.config/matplotlib"

# The uid and gid a kernel runs as when the grader runs as root.
NOBODY = 65534

# Environment variables passed into the sandbox (everything else is cleared).
PASSED_ENV = ("LANG", "LC_ALL", "PYTHONWARNINGS", "WORKBOOK_FAST", "PYTHONHASHSEED",
              "NBGRADER_EXECUTION", "WORKBOOK_LOGICAL_CPUS")

PASSED_ENV_PREFIXES = ("TF_", "OMP_", "OPENBLAS_", "MKL_", "CUDA_")

# Most processes and threads of one kernel (TensorFlow starts a few dozen; the keeper and init
# of a warm kernel count too).
MAX_TASKS_PER_KERNEL = 512

# Longest one job may take, seconds, whatever its cells' own limits; past it its kernels are
# killed and the job ends as "timed_out".
JOB_TIMEOUT_S = 1800

# Environment of a grading worker, which its kernels inherit: graded kernels run on the CPU (the
# same results for every student; CUDA's huge address-space reservations would collide with the
# memory limit), one thread each for TensorFlow and BLAS (every core already runs a worker).
WORKER_ENV = {"CUDA_VISIBLE_DEVICES": "", "TF_NUM_INTRAOP_THREADS": "1",
              "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

# Times the scheduler reschedules a job whose worker died while running it.
ALLOWED_FAILURES = 1

# Most memory of one worker process of the embedded cluster, bytes (its kernels, in cgroups of
# their own, are not counted: Dask measures the worker's own process).
WORKER_MEMORY_MAX = 4 * 2**30

# A student id nbgrader can use: it puts the id into file patterns (glob) and paths, so the
# characters of a pattern ([, ], *, ?), separators, spaces and a leading dot are not in it; a
# student folder named otherwise is graded under a safe id (intake/student_ids.py).
STUDENT_ID = re.compile(r"[\w@+-][\w.@+-]*")

# The largest notebook file read, bytes (a notebook of this course is under 1 MB with its outputs).
MAX_NOTEBOOK_BYTES = 50 * 2**20

# What the other files of one submission folder may take together, bytes; past it they are left
# out (each job carries its files to a worker).
MAX_OTHER_FILES_BYTES = 50 * 2**20

# The files a notebook writes in its kernel's working folder are copied back beside its autograded
# notebook, as nbgrader leaves them: regular files at the top of the folder, with names of
# WRITTEN_NAME (ASCII letters, digits, ``_``, ``.``, ``+``, ``-`` and inner spaces, starting with a
# letter or digit), at most MAX_WRITTEN_FILES of them taking MAX_OTHER_FILES_BYTES together; each is read
# through the grader's door in pieces of WRITTEN_CHUNK_BYTES (an answer is a bytes literal, at
# most 4 times as long, under MAX_MESSAGE_BYTES).
MAX_WRITTEN_FILES = 64

WRITTEN_CHUNK_BYTES = 2**20

# ASCII only, at most 100 bytes: under every file system's name limit, one name per spelling.
WRITTEN_NAME = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9_ .+-]{0,98}[A-Za-z0-9_+-]")

# Names never copied back, whatever the limits: files that act by where they lie (nbgrader's
# feedback converts every notebook of the folder; Python, Jupyter and nbgrader run from that
# folder load its .py, .pth and config files).
WRITTEN_REFUSED = re.compile(r".*\.(ipynb|py|pyc|pth|so|pyw)|(jupyter|nbgrader|ipython)_.*|conftest.*",
                             re.IGNORECASE)

# The most notes on left-out written files kept per notebook (one more says how many were not
# listed), and the seconds the copy-back of one notebook's files may take in all.
MAX_WRITTEN_NOTES = 10
WRITTEN_SECONDS = 60

# The deepest JSON nesting of a notebook read (a notebook is about 8 deep; deeper structures
# would reach Python's recursion limit in json, nbformat, jsonschema or copy).
MAX_JSON_DEPTH = 64
# The largest timestamp.txt read, bytes (nbgrader writes about 30; the formgrader reads 200 at most).
MAX_TIMESTAMP_BYTES = 200

# The most code the scan reads in one cell and in one notebook, characters (an answer of this
# course is a few kB; IPython's transformers and the parser take seconds per MB). What is past it
# is not read, and flagged as not scanned.
MAX_SCANNED_CELL_CHARS = 200_000

MAX_SCANNED_NOTEBOOK_CHARS = 1_000_000

# Environment variable naming the exchange root; nbgrader's own default otherwise.
EXCHANGE_ENV = "COURSE_EXCHANGE"

# Environment variable naming the instructor's folder of one class, outside this repository:
# ``nbgrader collect`` writes ``<class>/submitted``, ``course grade <class>/submitted --out
# <class>/grading`` grades them, and ``nbgrader release_feedback`` reads ``<class>/grading/feedback``.
CLASS_ENV = "COURSE_CLASS_DIR"

DEFAULT_EXCHANGE_ROOT = "/usr/local/share/nbgrader/exchange"
