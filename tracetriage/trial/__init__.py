"""`tracetriage try SCRIPT [ARGS...]`: run the experiments the report proposes, and hold each prediction to its
measurement.

    plan       which knobs the report's levers propose that can be turned without editing code (the catalogue's
               `outside`), with their predicted savings and the line to change
    runs       the child processes (tracetriage.capture.knob_runner): profiled and unprofiled, under a budget
    measure    medians, spreads and the verdict of predicted against measured
    results    a Row per knob and the Result
    calibrate  each measured run as a row of the prediction log (tracetriage.drills.predictions)
    voice      the table's words: text, markdown, JSON
    command    the command itself: a runner that only orders those steps
"""
