"""What-if: what each fix would buy, predicted from the trace alone.

The dependency graph of host calls, launches, streams, syncs and event waits (depgraph), its
replay as a discrete-event simulation (replay), the levers that edit the graph the way a fix
would change the program (levers/: one spec each, in one registry), their predictions (predict),
inside a range's windows (windows) and without the profiler's own cost (unprofiled). Reads the model
and the analyses.
"""
