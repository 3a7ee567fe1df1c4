"""Imported once by the forkserver, so every worker is forked with advisor already loaded.

Loading pandas, numpy and the engine takes a second or more; paid once in the server instead of
in every worker, and again in every fresh pool a crashed worker makes us start. The server must
stay single-threaded to fork safely, and OpenBLAS starts a thread pool when numpy loads: one worker
per core is the parallelism here, so each runs its BLAS on one thread, set before numpy loads.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

from . import worker  # noqa: E402,F401  (the import is the point)
