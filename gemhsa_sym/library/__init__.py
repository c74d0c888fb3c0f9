"""The derivations library: named configurations with their committed, regenerable records and documents.

:data:`LIBRARY` is the library shipped with the package (``gemhsa_sym/library/records``, the repository's
``derivations/`` folder), found with ``importlib.resources`` wherever the package is installed.
"""

from importlib import resources
from pathlib import Path

#: The library shipped with the package.
LIBRARY: Path = Path(str(resources.files(__name__) / "records"))
