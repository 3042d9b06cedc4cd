"""Fixtures for the sandbox's own tests: one warm and one cold launcher per xdist worker."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import make_launcher


@pytest.fixture(scope="session")
def warm_launcher():
    launcher = make_launcher()
    assert launcher.template is not None, launcher.applied
    launcher.template.wait_ready()
    yield launcher
    launcher.close()


@pytest.fixture(scope="session")
def cold_launcher():
    launcher = make_launcher(warm=False)
    yield launcher
    launcher.close()


@pytest.fixture(params=["warm", "cold"])
def any_launcher(request):
    """Each test that takes it runs on both ways of starting a runner."""
    return request.getfixturevalue(f"{request.param}_launcher")
