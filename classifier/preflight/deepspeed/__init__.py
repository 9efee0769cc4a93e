"""What DeepSpeed itself accepts: schema (dsdiag's built-in copy) and introspect (the installed
DeepSpeed's config models, imported lazily)."""
