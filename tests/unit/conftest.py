"""Every Problem any check returns while the unit tests run is kept, so that
test_zz_messages_complete.py can prove no message or fix reaches a user with a hole in it."""

import pytest

from ddpdoctor.core import findings


@pytest.fixture(autouse=True, scope="session")
def seen_problems() -> list:
    """Every Problem made so far in this session (test_zz_messages_complete.py reads it)."""
    seen: list = []
    original = findings.Problem.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen.append(self)

    findings.Problem.__init__ = recording
    yield seen
    findings.Problem.__init__ = original
