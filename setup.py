"""The one thing pyproject.toml cannot declare in setuptools' stable configuration: the native event scan, a C
extension module (analyzers/loading/eventscan.c -> tracetriage.analyzers.loading.eventscan). optional=True: where
it cannot be built (no C compiler, no Python headers) the install still succeeds, and the loader decodes with
msgspec (tracetriage.analyzers.loading.native says which it used)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("tracetriage.analyzers.loading.eventscan", ["analyzers/loading/eventscan.c"],
                             optional=True)])
