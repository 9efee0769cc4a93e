"""`dsdiag check-config`: parse (positions kept), checks (keys, auto, batch), precision, optim
and zero (their sections), command (the CLI and DeepSpeed's own verdict)."""
