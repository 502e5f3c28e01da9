"""What leaves the analyzers as files and objects: the one serializer (typed results -> the
`--json` objects) and the annotated trace for Perfetto (the idle gaps as a track named by cause).
"""
