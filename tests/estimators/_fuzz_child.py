"""Child of the model-file fuzz test: load each file named on stdin, report one line per file.

``START i`` before each load, then ``OK i``, ``REFUSED i`` (the library's ValueError) or
``OTHER i <type>: <message>``; a crash or hang leaves a ``START`` without its answer.
"""

from __future__ import annotations

import os
import sys
import warnings


def main() -> None:
    """Load the files named on stdin (run as a script by the fuzz test)."""
    warnings.simplefilter("ignore")
    from selrank.estimators import NeuralRanker, file_limits, load

    if os.environ.get("SELRANK_TEST_MAX_FILE_BYTES"):
        file_limits.MAX_FILE_BYTES = int(os.environ["SELRANK_TEST_MAX_FILE_BYTES"])
    for i, line in enumerate(sys.stdin.read().splitlines()):
        print(f"START {i}", flush=True)
        try:
            if line.endswith((".pt", ".pt.gz")):
                NeuralRanker.load(line)
            else:
                load(line)
            print(f"OK {i}", flush=True)
        except ValueError:
            print(f"REFUSED {i}", flush=True)
        except Exception as exc:
            print(f"OTHER {i} {type(exc).__name__}: {str(exc)[:200]!r}", flush=True)


if __name__ == "__main__":
    main()
