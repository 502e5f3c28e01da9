"""The triage: the verdicts that combine the analyses and the what-if replay.

One frozen `Analysis` of a trace with its next experiment (report), the profiler's own cost in it
(overhead), where in the user's code each verdict points (sources), the change between two traces with
the lever it applied (diff) and per op (opdiff), the CI gates (gate), the timeline as arrays and binned
overviews (timeline), and which framework construct held the host in each idle gap and bin of it
(idle_constructs). Consumers read their fields; the words are the voice layer's.
"""
