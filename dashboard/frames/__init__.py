"""What each dashboard page is shown, a module per page: report, roofline, timeline (and the lanes above it),
diff, what-if, ranks, practice. Each turns the typed analysis into plain frames and small frozen views; none
computes a number the analyzers already computed. The pages and charts read them only through
tracetriage.dashboard.data, the one door (tests/test_imports.py pins it).
"""
