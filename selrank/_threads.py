"""Default thread counts for LightGBM and XGBoost: physical cores, fewer for small data.

LightGBM's and XGBoost's own default is OpenMP's: one thread per *logical* CPU. LightGBM's
documentation advises the number of physical cores, and fewer threads for small data, where
the threads' synchronisation costs more than the parallel work saves; on a busy machine the
spinning OpenMP threads burn CPU time for nothing (a small ``selrank train --data`` took 29.5
CPU seconds with OpenMP's default and 5.3 with one thread on the shared 2-core machine, issue
29). :func:`default_threads` is what selrank's estimators and command line use when the user
sets no thread count (``num_threads`` / ``n_jobs`` / ``nthread`` ..., or ``--threads``).
"""

from __future__ import annotations

import os

__all__ = ["ROWS_PER_THREAD", "available_cores", "default_threads"]

#: One thread per this many training rows (at least one, at most the physical cores).
ROWS_PER_THREAD = 20_000

#: Every alias LightGBM and XGBoost accept for the thread count.
THREAD_ALIASES = ("num_threads", "num_thread", "nthread", "nthreads", "n_jobs")


def available_cores() -> int:
    """Physical cores this process may run on: the CPUs of its affinity mask, at most the
    machine's physical cores (``psutil`` when installed, else every logical CPU counts)."""
    try:
        logical = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        logical = os.cpu_count() or 1
    physical = None
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
    except Exception:  # pragma: no cover - psutil missing or unable to tell
        physical = None
    return max(1, min(logical, physical or logical))


def default_threads(n_rows: int) -> int:
    """Threads for a fit on ``n_rows`` rows: one per :data:`ROWS_PER_THREAD` rows (so one
    below 40,000 rows, e.g. every fold of the LETOR sets), at most :func:`available_cores`.

    Examples
    --------
    >>> default_threads(10_000)
    1
    >>> 1 <= default_threads(10_000_000) <= available_cores()
    True
    """
    return max(1, min(available_cores(), int(n_rows) // ROWS_PER_THREAD))


def user_threads(params: dict) -> bool:
    """Whether ``params`` already sets a thread count (under any alias, not None)."""
    return any(params.get(k) is not None for k in THREAD_ALIASES)
