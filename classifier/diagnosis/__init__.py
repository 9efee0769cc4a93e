"""The diagnosis of one job, one module per stage, in the order the data flows:

read (bytes -> lines; follow opens a file that may still be growing) -> prefilter (big inputs:
only the lines worth a look) -> normalize (launcher prefixes peeled, ranks and timestamps
found) -> match (rule hits; signals and region collect the failure markers and the fallback
model's input alongside) -> rootcause (the cause among the echoes) -> fallback (the text
model, when no rule fired) -> remediate (checklist and steps filled with the log's values) ->
culprit (the rank and host it started on; topology maps ranks to hosts, flightrec reads
flight-recorder dumps) -> diagnose (the JSON contract), driven by command.
"""
