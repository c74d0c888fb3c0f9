"""Theory beside Monte Carlo (docs/verification.md §4): comparison tables, plots, sweeps and the claims report.

Data flow one way: a configuration gives tasks (the law's summary, seeded draws
of the softmax layer and of its Gaussian equivalent) that run on any
``concurrent.futures.Executor``; their results are compared and reported.
"""
