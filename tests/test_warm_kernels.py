"""Warm grading kernels (autograder.grading.kernels.warm): forked from a template that imported
TensorFlow, each as pristine and as isolated as a cold kernel.

Real kernels are started through nbclient by the real kernel manager, one after another from the
same template, as nbgrader grades one student after another.
"""
import pytest

from autograder.grading.kernels import warm as warm_kernels
from autograder.grading.kernels.bwrap import sandbox_problem
from tests.test_sandbox import run_in_kernel

pytestmark = pytest.mark.skipif(sandbox_problem() is not None,
                                reason=f"no sandbox on this host: {sandbox_problem()}")

RANDOM = ("import random, numpy as np, tensorflow as tf\n"
          "print(random.random(), np.random.rand(), float(tf.random.uniform([])))")
SEEDED = "from utils import setup_notebook\nsetup_notebook(seed=0)\n" + RANDOM
FIRST_STUDENT = [
    "import sys; imported = 'tensorflow' in sys.modules\n"
    "from tensorflow.python.eager import context\n"
    "print(imported, context.context()._context_handle is not None)",
    "secret_answer = 42",
    # Patches a later student would profit from, if they lasted.
    "import builtins, autograder.checks.tapes as t, tensorflow as tf, numpy as np\n"
    "t.check_square_grad = lambda *a, **k: None\n"
    "tf.GradientTape.gradient = lambda *a, **k: 'patched'\n"
    "np.allclose = lambda *a, **k: True\n"
    "builtins.answer_key = 'leak'",
    "import os, subprocess\n"
    "open('/tmp/leak', 'w').write('A'); open('leak', 'w').write('A'); open('/dev/shm/leak', 'w')\n"
    "subprocess.Popen(['sleep', '600'], start_new_session=True); print('left behind')",
    RANDOM,
    SEEDED,
    # Lower the scheduling priority of its session (the scheduler's autogroup), for later kernels.
    "import ctypes\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"
    "try:\n    open('/proc/self/autogroup', 'w').write('19')\nexcept OSError:\n    pass",
    # Outlive the job: no parent-death signal, and an exit that never ends.
    "import ctypes, os, time\nctypes.CDLL(None).prctl(1, 0, 0, 0, 0)\n"
    "os._exit = lambda code=0: time.sleep(10**6)",
]
NEXT_STUDENT = [
    "print('secret_answer' in dir())",
    "import builtins, autograder.checks.tapes as t, tensorflow as tf, numpy as np\n"
    "print(t.check_square_grad.__module__, tf.GradientTape.gradient.__name__, "
    "np.allclose.__module__, hasattr(builtins, 'answer_key'))",
    "import os\n"
    "print(os.path.exists('/tmp/leak'), os.path.exists('leak'), os.path.exists('/dev/shm/leak'))",
    "print(sorted(open(f'/proc/{p}/comm').read().strip() for p in os.listdir('/proc') if p.isdigit()))",
    RANDOM,
    SEEDED,
    "import os\nprint(open('/proc/self/autogroup').read().split()[-1] "
    "if os.path.exists('/proc/self/autogroup') else 'no autogroups')",
    # The connection folder (on the host's disk) takes no file once the kernel's sockets exist.
    "from ipykernel.kernelapp import IPKernelApp\n"
    "folder = os.path.dirname(IPKernelApp.instance().connection_file)\n"
    "try:\n    open(os.path.join(folder, 'blob'), 'w')\nexcept OSError as error:\n"
    "    print(type(error).__name__, error.errno)",
]


def _run(cells: list[str], warm: bool = True):
    """(Each cell's output, stripped; the kernel manager), as :func:`run_in_kernel` gives them."""
    outputs, km = run_in_kernel(cells, warm)
    return [text.strip() for text in outputs], km


@pytest.fixture(scope="module")
def students():
    first, first_km = _run(FIRST_STUDENT)
    template = first_km.warm_template
    folder_probe = (f"import os; print(os.path.exists({str(template.folder / 'control')!r}), "
                    f"os.listdir({str(template.folder)!r}))")
    second, second_km = _run(NEXT_STUDENT + [folder_probe])
    cold, _ = _run([FIRST_STUDENT[0], RANDOM, SEEDED], warm=False)
    return {"first": first, "second": second, "cold": cold, "template": template,
            "same_template": second_km.warm_template is template and template.alive(),
            "second_dir": second_km.kernel_dir.name}


def test_a_warm_kernel_starts_with_tensorflow_imported_and_running(students):
    assert students["same_template"]  # both students' kernels were forked from one template
    assert students["first"][0] == "True True"
    assert students["cold"][0].splitlines()[-1] == "False False"  # a cold kernel has imported nothing yet


def test_the_next_kernel_shows_none_of_the_previous_students_variables(students):
    assert students["second"][0] == "False"


def test_modules_patched_by_an_earlier_student_are_pristine(students):
    assert students["second"][1] == "autograder.checks.tapes gradient numpy False"


def test_files_and_processes_of_an_earlier_student_are_gone(students):
    assert students["first"][3] == "left behind"
    assert students["second"][2] == "False False False"
    # The earlier student's sleep and kernel (which tried to outlive its job) died with its
    # namespace. /proc is the sandbox's: it lists the sandbox's init (bwrap), the template, this
    # kernel's keeper and init (it can neither signal nor trace them), and this kernel.
    processes = eval(students["second"][3])
    assert "sleep" not in processes and len(processes) == 5, processes


def test_an_earlier_student_cannot_lower_a_later_kernels_priority(students):
    assert students["second"][6] in ("0", "no autogroups")


def test_the_connection_folder_takes_no_file_from_the_kernel(students):
    assert students["second"][7] == "OSError 30"  # EROFS: read-only


def test_random_state_is_fresh_per_kernel_and_seeding_gives_what_a_cold_kernel_gives(students):
    first, second, cold = students["first"], students["second"], students["cold"]
    unseeded = [first[4].split(), second[4].split(), cold[1].splitlines()[-1].split()]
    for generator in range(3):  # Python's random, NumPy's, TensorFlow's: each differs per kernel
        values = [kernel[generator] for kernel in unseeded]
        assert len(set(values)) == 3, values
    assert first[5].splitlines()[-1] == second[5].splitlines()[-1] == cold[2].splitlines()[-1]


def test_a_kernel_cannot_reach_the_template_or_other_kernels_folders(students):
    control_visible, listing = students["second"][-1].split(" ", 1)  # the folder probe
    assert control_visible == "False"
    assert eval(listing) == [students["second_dir"]]


def test_where_no_template_can_start_kernels_start_cold(monkeypatch, caplog):
    warm_kernels.stop_templates()
    monkeypatch.setattr(warm_kernels, "BOOT_SOURCE", "import sys; print('no namespaces'); sys.exit(3)")
    try:
        outputs, km = _run(["print(1 + 1)"])
    finally:
        warm_kernels.stop_templates()
    assert outputs == ["2"] and km.warm is False and km.warm_template is None
    assert "the warm-kernel template did not start: no namespaces" in caplog.text
