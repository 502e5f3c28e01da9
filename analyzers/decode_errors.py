"""The one error a bad trace raises: its message is one line for the user (exit code 2)."""


class DecodeError(ValueError):
    """Not a usable trace; the message is one line for the user."""
