"""The words a user reads, by audience: report, diff, ranks, whatif, drills, dashboard; the words
they share in common. Every sentence and advice text lives here; number formats are the model's
(tracetriage.analyzers.model.units). A voice module says what the analysis decided: it computes no verdict and
no threshold of its own.
"""
