"""The six rungs of the practice ladder grounded in the GPU's execution model and the bytes a tensor moves (issue 37):
M00.02 ridge-point workbook, M01.01 tensor memory accountant, M01.02 view or copy, M01.06 decode intensity,
M03.01 occupancy is not the goal, M03.02 coalescing and the transpose tax.

Each kind's parts (parts), its facts from the analyzers (facts: the one adapter, as drills.evidence is for the
others), its key (keys), its grading (grading), what `drill show` prints (show) and its words (words). The bank,
the grader, `drill show` and the dashboard reach these through one line each.
"""
