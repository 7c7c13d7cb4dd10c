"""What reaches students and the formgrader: the release, the student bundle, nbgrader's exchange
and the formgrader's course folder."""
