"""fivectl: the lifecycle of a long-lived self-play RL experiment on a MOBA game."""

import hashlib
import os
from pathlib import Path

__version__ = "0.1.0"


def _numba_cache_dir(package: Path | None = None) -> str:
    """A numba cache directory keyed by the source of every compiled module.

    numba's on-disk cache checks only the file that defines a function, not the functions it inlines from other
    files: after an edit to ``sim/core.py``, the encoder's cached kernels would keep the old game rules (seen: an
    action mask that the encoder did not apply while the game did). Keying the directory by all of the kernels'
    sources makes any edit recompile everything once. ``package``: the fivectl folder (this one by default).
    """
    package = package or Path(__file__).resolve().parent
    digest = hashlib.blake2b(digest_size=8)
    # model/: its kernels (model/kernels/) call each other's compiled functions too; subfolders count as well
    sources = [path for folder in ("sim", "schema", "model") for path in (package / folder).rglob("*.py")]
    for path in sorted(sources):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fivectl" / "numba"
    return str(base / digest.hexdigest())


# Before numba is imported anywhere in fivectl (numba reads its configuration at import).
os.environ.setdefault("NUMBA_CACHE_DIR", _numba_cache_dir())
