"""The call path from ``SelectiveRanker.fit`` to the link (issue 31; docs/architecture.md).

Trains a small LightGBM ranker with a link that has no fast path (the generic path:
``loss="pairwise", link="smelu"``) and prints the frames of the longest call into
``selrank/links`` made by a gradient evaluation during boosting (a frame of LightGBM's ``engine.train`` on the stack):
the selrank files and frames from the estimator's ``fit`` down to the link. Usage::

    PYTHONPATH=. python scripts/fit_to_link_path.py [--json]
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import numpy as np


def main() -> int:
    import selrank
    from selrank import SelectiveRanker

    root = os.path.dirname(os.path.abspath(selrank.__file__))
    links = os.path.join(root, "links")
    found: list[list[tuple[str, int, str]]] = []

    def profile(frame, event, arg):
        if len(found) > 200 or event != "call" or not frame.f_code.co_filename.startswith(links):
            return
        stack = []
        f = frame
        while f is not None:
            stack.append((f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
            f = f.f_back
        stack.reverse()
        if any(fn.endswith(os.path.join("lightgbm", "engine.py")) for fn, _, _ in stack):
            found.append(stack)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.clip(np.round(X[:, 0] + 1), 0, 2)
    est = SelectiveRanker("pairwise", link="smelu", n_estimators=2, num_leaves=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sys.setprofile(profile)
        try:
            est.fit(X, y, group=[20] * 10)
        finally:
            sys.setprofile(None)
    # the gradient path: the longest stack into the link during boosting (a grad_hess call)
    grads = [st for st in found if any(name == "grad_hess" for _, _, name in st)] or found
    stack = max(grads, key=len)
    start = next(
        i for i, (fn, _, name) in enumerate(stack) if name == "fit" and fn.startswith(root)
    )
    path = stack[start:]
    ours = [
        (os.path.relpath(fn, os.path.dirname(root)), line, name)
        for fn, line, name in path
        if fn.startswith(root)
    ]
    files = list(dict.fromkeys(fn for fn, _, _ in ours))
    result = {
        "frames_total": len(path),
        "frames_selrank": len(ours),
        "files_selrank": len(files),
        "files": files,
        "frames": [f"{fn}:{line} {name}" for fn, line, name in ours],
        "other_frames": [
            f"{os.path.basename(os.path.dirname(fn))}/{os.path.basename(fn)}:{line} {name}"
            for fn, line, name in path
            if not fn.startswith(root)
        ],
    }
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for line in result["frames"]:
            print(line)
        print(
            f"{result['files_selrank']} selrank files, {result['frames_selrank']} selrank frames "
            f"({result['frames_total']} frames with LightGBM's)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
