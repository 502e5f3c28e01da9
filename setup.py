"""The one thing pyproject.toml cannot declare in setuptools' stable configuration: the native event scan, a C
extension module (analyzers/loading/_scan.c -> tracetriage.analyzers.loading._scan). optional=True: where it
cannot be built (no C compiler, no Python headers) the install still succeeds, and the loader decodes with
msgspec (tracetriage.analyzers.loading.native says which it used)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("tracetriage.analyzers.loading._scan", ["analyzers/loading/_scan.c"], optional=True)])
