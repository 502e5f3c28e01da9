"""TOML reading on every supported Python: tomllib from 3.11, the tomli backport on 3.10."""
try:
    import tomllib  # noqa: F401
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # noqa: F401
