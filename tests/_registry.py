"""Test cases built from the registries, so a new entry is tested the moment it is registered."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selrank.links import LINKS, CallableLink, get_link
from selrank.losses import LOSSES
from selrank.scalings import SCALINGS, get_scaling


def link_cases():
    """``(id, link)`` for every registry example, plus user-defined (callable) links."""
    cases = []
    for name, factory in sorted(LINKS.items()):
        for k, params in enumerate(getattr(factory, "examples", [{}])):
            cases.append((f"{name}-{k}", get_link(name, **params)))
    cases.append(("callable-cubic", CallableLink(lambda z: z**3 / 3.0 + z, name="cubic")))
    cases.append(
        (
            "callable-numpy-tanh",
            CallableLink(
                lambda z: np.tanh(np.asarray(z)) + 0.1 * np.asarray(z), derivative="differences"
            ),
        )
    )
    return cases


def scaling_cases():
    cases = []
    for name, cls in sorted(SCALINGS.items()):
        for k, params in enumerate(cls.examples):
            cases.append((f"{name}-{k}", get_scaling(name, **params)))
    return cases


def loss_cases():
    """``pytest.param(name, params)`` for every example of every registered loss."""
    out = []
    for name, factory in sorted(LOSSES.items()):
        for k, params in enumerate(getattr(factory, "examples", [{}])):
            out.append(pytest.param(name, params, id=f"{name}-{k}"))
    return out


def sample_scores(link, rng, n=64, spread=3.0):
    """Scores inside the link's domain, covering both sides of its shift."""
    lo, hi = link.domain
    if math.isfinite(lo) and math.isfinite(hi):
        return rng.uniform(lo + 0.02 * (hi - lo), hi - 0.02 * (hi - lo), size=n)
    centre = float(getattr(link, "beta", 0.0))
    scale = spread / float(getattr(link, "alpha", 1.0))
    return centre + scale * rng.uniform(-1.0, 1.0, size=n)


def smooth_points(fun, z, eps=1e-6, rtol=1e-4):
    """Mask of points where ``fun`` is differentiable (one-sided quotients agree): skips kinks."""
    f0 = fun(z)
    left = (f0 - fun(z - eps)) / eps
    right = (fun(z + eps) - f0) / eps
    return np.abs(left - right) <= rtol * np.maximum(1.0, np.abs(left) + np.abs(right))
