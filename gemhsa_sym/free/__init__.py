"""Free-probability engine: limiting singular-value laws of polynomials in rectangular Gaussian matrices.

>>> from gemhsa_sym.free import Dim, Gaussian, spectral_law
>>> n, d = Dim("n"), Dim("d")
>>> law = spectral_law(Gaussian("X", n, d), {n: 1, d: 2})   # Marchenko–Pastur
"""

from .descent import BranchError
from .law import SpectralLaw, spectral_law
from .matrices import Dim, Gaussian, ShapeMismatch
from .pencil import Pencil, linearise
from .results import Atom, Edge
from .system import DysonSystem, W, dyson_system

__all__ = [
    "Atom", "BranchError", "Dim", "DysonSystem", "Edge", "Gaussian", "Pencil", "ShapeMismatch",
    "SpectralLaw", "W", "dyson_system", "linearise", "spectral_law",
]
