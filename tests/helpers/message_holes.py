"""A pytest plugin: no message or fix reaches a user with a hole in it (`<host>`, `{name}` left
unfilled). Every Problem a check makes while a test runs (outside tests/integration/, whose
messages come from other processes) is read; at the end of the session the holes found are
listed and the run fails, whatever order the tests ran in. Under pytest-xdist each worker sends
what it found to the controller (`workeroutput`), which judges the whole run."""

from __future__ import annotations

import re

import pytest

from ddpdoctor.core import findings

# `<host>`, `<nic>`, `{host}`, `{name!r}`: a template's hole. `<redacted>` is a value, not a hole.
HOLE = re.compile(r"<(?!redacted>)[a-z_][a-z_ -]*>|\{[a-z_][a-z_0-9]*(?:![rs])?\}")
# Quoted user code may hold braces of its own (an f-string path): not ours to fill.
USER_CODE = re.compile(r"\bf'[^']*'|\bf\"[^\"]*\"")
KEY = "ddpdoctor_message_holes"
_SHOWN = 20  # holes listed in the summary; the rest are counted


def holes(text: str) -> list[str]:
    if not text or ("<" not in text and "{" not in text):
        return []  # most messages: no regex (a test may make 100,000 Problems)
    return HOLE.findall(USER_CODE.sub("", text))


class HoleWatch:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.watching: str | None = None  # the nodeid of the test running now, if it is watched
        self.found: list[list[str]] = []  # [nodeid, message, hint]
        self.made = 0  # Problems seen, across every worker
        self._original = findings.Problem.__init__
        watch = self

        def recording(problem, *args, **kwargs):
            watch._original(problem, *args, **kwargs)
            if watch.watching is not None:
                watch.made += 1
                if holes(problem.message) or holes(problem.hint):
                    watch.found.append([watch.watching, problem.message, problem.hint or ""])
        findings.Problem.__init__ = recording

    def unconfigure(self) -> None:
        findings.Problem.__init__ = self._original

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item):
        self.watching = None if "integration" in item.path.parts else item.nodeid
        try:
            yield
        finally:
            self.watching = None

    @pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown where xdist is absent or off
    def pytest_testnodedown(self, node, error):
        """The controller: what one worker found."""
        output = getattr(node, "workeroutput", {}).get(KEY)
        if output:
            self.made += output["made"]
            self.found += output["found"]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller judges
            workeroutput[KEY] = {"made": self.made, "found": self.found}
        elif self.found and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.found and getattr(self.config, "workeroutput", None) is None:
            terminalreporter.write_sep("=", f"{len(self.found)} message(s) with a hole", red=True)
            for nodeid, message, hint in self.found[:_SHOWN]:
                terminalreporter.write_line(f"{nodeid}: {message!r} / fix {hint!r}: "
                                            f"{holes(message) + holes(hint)}")
            if len(self.found) > _SHOWN:
                terminalreporter.write_line(f"... and {len(self.found) - _SHOWN} more")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(HoleWatch(config), "ddpdoctor-message-holes")


def pytest_unconfigure(config: pytest.Config) -> None:
    watch = config.pluginmanager.get_plugin("ddpdoctor-message-holes")
    if watch is not None:
        watch.unconfigure()
