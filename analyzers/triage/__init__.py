"""The triage: the verdicts that combine the analyses and the what-if replay.

One frozen `Analysis` of a trace with its next experiment (report), the change between two
traces with the lever it applied (diff), the timeline as arrays and binned overviews (timeline).
Consumers read their fields; the words are the voice layer's.
"""
