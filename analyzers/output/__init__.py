"""What leaves the analyzers as files and objects: the one serializer (typed results -> the `--json`
objects) and its JSON Schema, the invariants every report's JSON must keep, the annotated trace for
Perfetto (the idle gaps as a track named by cause), HTA's numbers as a reference (`report --hta`), and a
trace without its named ranges (strip_ranges, for the drills).
"""
