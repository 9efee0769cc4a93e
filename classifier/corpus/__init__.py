"""Tools over the labelled corpus (corpus/ at the repository's top): evaluate (`dsdiag eval`,
scores per category and split) and train (the fallback model, `make model`)."""
