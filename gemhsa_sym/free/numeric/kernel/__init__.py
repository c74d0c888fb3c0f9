"""The compiled kernel of the continuation (numba)."""
