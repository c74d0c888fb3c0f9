"""The layer description: configuration, modes, sharing, widths, scores, Hermite data, the Gaussian-equivalent polynomial and the layer's readings."""
