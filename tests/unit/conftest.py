"""Every Problem any check returns while the unit tests run is kept, so that
test_zz_messages_complete.py can prove no message or fix reaches a user with a hole in it."""

import pytest

from ddpdoctor.core import findings

SEEN_PROBLEMS: list = []


@pytest.fixture(autouse=True, scope="session")
def _collect_problems():
    original = findings.Problem.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        SEEN_PROBLEMS.append(self)

    findings.Problem.__init__ = recording
    yield
    findings.Problem.__init__ = original
