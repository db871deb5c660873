"""The two ways ddpdoctor itself can fail, each with its own exit code.

Problems with the user's machines or script are findings, never exceptions.
"""


class UsageError(Exception):
    """Bad input to ddpdoctor (a missing script, a malformed host list, a nonsense flag value).

    The CLI prints it as one line and exits 2. The message must say what is wrong and where.
    """


class ToolFailure(Exception):
    """ddpdoctor could not do its job (the launcher did not start, the run dir is unwritable).

    The CLI prints it as one line and exits 3, after writing whatever report it still can.
    """
