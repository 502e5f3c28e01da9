"""What-if: what each fix would buy, predicted from the trace alone.

The dependency graph of host calls, launches, streams, syncs and event waits (depgraph), its
replay as a discrete-event simulation (replay), and the levers that edit the graph the way a fix
would change the program, replayed (predict). Reads the model and the analyses.
"""
