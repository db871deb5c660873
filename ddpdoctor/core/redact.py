"""Keep secrets out of every fact, log and report.

Standard library only: facts.py ships this module's source to remote nodes over ssh.
"""

import os
import re

# Names, not values, decide: a variable is secret if its name says so.
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION",
                         re.IGNORECASE)
REDACTED = "<redacted>"


def looks_secret(name):
    """True for an environment variable name that looks like it holds a secret."""
    return bool(SECRET_NAME.search(name))


def redact_env(env):
    """A copy of `env` with the values of secret-looking names replaced by a marker."""
    return {k: (REDACTED if looks_secret(k) else v) for k, v in env.items()}


def secret_values(env=None):
    """The values of secret-looking variables, longest first, for scrubbing free text.

    Very short values are left out: scrubbing "1" or "on" would mangle every report."""
    env = os.environ if env is None else env
    values = {v for k, v in env.items() if looks_secret(k) and len(v) >= 6}
    return sorted(values, key=len, reverse=True)


def scrub(text, values=None):
    """Replace every known secret value in free text (tracebacks, stacks, command lines)."""
    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text
