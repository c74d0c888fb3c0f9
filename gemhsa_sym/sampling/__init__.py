"""Seeded Monte Carlo: the real layer, its Gaussian equivalent, a polynomial's own sampler, executors."""
