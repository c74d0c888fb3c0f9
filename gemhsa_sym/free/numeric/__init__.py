"""The Dyson system in numbers: Newton, continuation of the physical branch, folds and rays."""
