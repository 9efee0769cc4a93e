"""The named confidence levels of a diagnosis (the JSON's `confidence`), in one place.

A rule hit is worth more than a guess, a cause more than a symptom, and a cause that several
ranks (or lines) repeat more than one seen once. A model answer carries its own calibrated
probability instead (classifier/diagnosis/fallback.py).
"""

CAUSE_REPEATED = 0.95  # the winning cause rule fired more than once
CAUSE = 0.9            # a cause rule fired once
CUT = 0.7              # a cause read from a message cut at the end, or from frames alone
SYMPTOM = 0.6          # only a symptom (an echo of some failure) explains the job
HEALTHY = 0.8          # `none`: no failure marker, or each one followed by a success marker
DOUBTFUL_NONE = 0.5    # `none`, though a failure marker was seen with no line to show for it
UNEXPLAINED = 0.3      # `unknown`: a failure that no rule explains
NOTHING_READ = 0.0     # `none` of an empty input or one that is not text: no verdict at all

# A fix-first verdict (retryable false, exit 100-119) makes a Kubernetes Job give up for good,
# so it takes a rule's cause read whole: a symptom, a cut message or a model guess, however
# probable, leaves the verdict open and the exit code generic.
FIX_FIRST = CAUSE
