"""The laws: one protocol, answered by spectral laws, attention laws, polynomial-model laws and causal laws."""
