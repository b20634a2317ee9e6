"""Errors that mean bad input: the CLI prints them as one line and exits with code 2."""


class HarnessError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""


class ConfigError(HarnessError):
    """An invalid, unknown or mistyped configuration value."""


class DataError(HarnessError):
    """A missing, empty or unreadable corpus, or an unusable tokenizer."""
