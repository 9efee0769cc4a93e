"""Preflight: check a job before it runs. config (`dsdiag check-config`: parse, checks, optim,
zero, command), deepspeed (the installed DeepSpeed's schema and introspection), env (`dsdiag
env`: install, environment, launch sections into one report); finding is what they share."""
