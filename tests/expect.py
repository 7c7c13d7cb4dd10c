"""What the check tests share: expecting a check to fail with a named mistake."""
import pytest

from autograder.checks.compare import CheckFailed


def flat(error) -> str:
    """A check's message on one line: messages are wrapped at 78 columns for notebooks."""
    return " ".join(str(error).split())


def fails_with(check, fn, mistake, *words, **kwargs) -> CheckFailed:
    """Run ``check(fn, **kwargs)``; it must raise CheckFailed naming ``mistake`` (an id such as
    "M01", or None) with every one of ``words`` in its message. Returns the exception."""
    with pytest.raises(CheckFailed) as info:
        check(fn, **kwargs)
    assert info.value.mistake == mistake, str(info.value)
    for word in words:
        assert word in flat(info.value), str(info.value)
    return info.value


def fails(check, fn, mistake=None, says="") -> str:
    """Run ``check(fn)``; it must raise CheckFailed naming ``mistake`` with ``says`` in its
    message, compared without regard to case. Returns the message."""
    with pytest.raises(CheckFailed) as info:
        check(fn)
    assert info.value.mistake == mistake, str(info.value)
    assert says.lower() in flat(info.value).lower(), str(info.value)
    return str(info.value)
