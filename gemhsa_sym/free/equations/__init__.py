"""The Dyson system reduced, cut to its minimal system, expanded in moments and scaled."""
