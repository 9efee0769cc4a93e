"""Many jobs at once: discover (cut an archive into jobs), run (the per-job work, in a process
pool or on Dask), group (the summary's key), triage (the command), summary and html (reports)."""
