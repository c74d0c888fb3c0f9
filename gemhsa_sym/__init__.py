"""gemhsa_sym: limiting spectral laws of random multi-head self-attention.

Gaussian equivalence turns softmax attention into a polynomial in independent
Gaussian matrices; free probability (linear pencils and the matrix Dyson
equation) gives its limiting singular-value law.
"""

__version__ = "0.1.0"
