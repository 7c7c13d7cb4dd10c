"""The grading kernels: their managers, the bubblewrap sandbox, the launcher, cgroups and seccomp,
and warm kernels forked from a template. Runs on the grader; what runs inside a kernel is in
:mod:`autograder.grading.kernel_side`, sent as text."""
