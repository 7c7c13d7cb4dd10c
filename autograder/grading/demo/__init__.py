"""The sample class of ``course demo`` and the grading tests, and the speed benchmark."""
