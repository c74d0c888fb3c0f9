"""Dyson equations over token positions: variance profiles and the two-point equation of masked scores."""
