"""`dsdiag env`: report (checks and shared helpers), install, environment, launch (the
sections, in the chapter's order), command (the CLI)."""
