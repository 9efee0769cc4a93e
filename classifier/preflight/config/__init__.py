"""`dsdiag check-config`: parse (positions kept), checks (keys, auto, batch), precision, optim
and zero (their sections), hf (configs and names meant for HF Trainer), command (the CLI and
DeepSpeed's own verdict), report (text, JSON, GitHub annotations)."""
