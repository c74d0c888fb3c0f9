"""Polynomials in Gaussian matrices, their linear pencil and their matrix Dyson system."""
