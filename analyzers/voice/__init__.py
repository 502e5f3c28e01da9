"""The words a user reads of the engine, by audience: the report's five lines and caveats (report, health,
steps, sources, communication, graphs), diff, ranks, whatif, the CI gates' line, Markdown for pull requests,
the notebook's cells; the words they share (common) and each idle cause's record (causes: its words,
advice, colour and mark). Every sentence and advice text of the engine lives here; the dashboard's and the
drills' own words live in their apps (tracetriage.dashboard.words, tracetriage.drills.words), composed from
these. Number formats are the model's (tracetriage.analyzers.model.units). A voice module says what the
analysis decided: it computes no verdict and no threshold of its own.
"""
