"""Asserting the typed-error promise: the NetworkError a call raises, and nothing else."""

import pytest

from core import NetworkError


def network_error(fn) -> NetworkError:
    """Run ``fn``; return the NetworkError it raises. Any other exception type (or none) fails the test."""
    try:
        fn()
    except NetworkError as e:
        assert type(e) is NetworkError
        return e
    except BaseException as e:     # noqa: BLE001 — the point is to catch whatever escapes
        pytest.fail(f"raised {type(e).__name__} instead of NetworkError: {e}")
    pytest.fail("no error was raised")
