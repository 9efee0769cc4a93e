"""Rules are data (rules/*.yaml): model (the compiled rule set), load (find, validate, compile),
lint (the backtracking check every regex passes), examples (each rule's own examples run),
command (`dsdiag rules lint|test|export`)."""
