"""The error every layer raises for input that is no usable trace, in a module of its own that imports nothing:
reading a file (tracetriage.analyzers.loading.read) can start, in a thread, before numpy is imported."""


class TraceError(ValueError):
    """Not a usable trace (or range, or directory of ranks); the message is one line for the user."""
