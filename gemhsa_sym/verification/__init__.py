"""Theory beside Monte Carlo (docs/verification.md §4): comparison tables, plots, sweeps and the claims report.

Data flow one way: a configuration gives tasks (the law's summary, seeded draws
of the softmax layer and of its Gaussian equivalent) that run on any
``concurrent.futures.Executor``; their results are compared and reported.
"""

from gemhsa_sym.executors import open_executor, run_tasks

from .compare import Comparison, compare, verify
from .theory import Theory, theory_of, theory_task

__all__ = ["Comparison", "Theory", "compare", "open_executor", "run_tasks", "theory_of", "theory_task", "verify"]
