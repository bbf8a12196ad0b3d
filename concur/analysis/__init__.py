"""The analysis layer: from a tidy table of results to concurrence matrices and figures.

Everything here is a pure function over pandas objects: reading
results (`tidy`, `reference`, `leaderboards`, `results`), reducing hyperparameter samples
(`policy`), the correlation math
(`concurrence`, `bootstrap`), effective robustness (`robustness`). Plotting lives in
`concur.plots`, command-line I/O in `concur.cli`.
"""
