"""Free-probability engine: limiting singular-value laws of polynomials in rectangular Gaussian matrices.

Its rooms follow the data flow (docs/architecture.md §7.1): ``expressions`` (matrices, pencil, Dyson
system) -> ``equations`` (reductions, minimal system, moments, scale) -> ``algebraic`` (P(m, w), its
discriminant) and ``numeric`` (Newton and continuation, with the compiled ``kernel``); ``positions``
holds the Dyson equations over token positions. The engine does not import the attention modules.
"""
