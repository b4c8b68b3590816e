"""Padded test batches for every head, built from the loss registries."""

from __future__ import annotations

import math

import numpy as np
import torch

from selrank.losses import (
    CompositeSoftmax,
    Decomposed,
    Listwise,
    Loss,
    Pairwise,
    Pointwise,
    get_loss,
)

from .._registry import sample_scores

#: List lengths of the standard padded batch: a singleton and an empty list included.
SIZES = (3, 1, 5, 0, 4, 2)
WIDTH = 6
K = 4
PAD = -1.0


def selective_cases():
    """``(id, core loss)`` for every example of every selective loss class."""
    cases = []
    for cls in (Pointwise, Pairwise, Listwise, CompositeSoftmax, Decomposed):
        for k, params in enumerate(cls.examples):
            cases.append((f"{cls.name}-{k}", get_loss(cls.name, **params)))
    return cases


def list_targets(loss: Loss, rng, n: int, sizes) -> np.ndarray:
    """Flat targets of ``n`` real items that fit ``loss`` (domain, range, target space)."""
    if isinstance(loss, Pointwise):
        link = loss.link
        if loss.target == "link":
            lo, hi = link.range
            lo = lo if math.isfinite(lo) else -3.0
            hi = hi if math.isfinite(hi) else 3.0
            return rng.uniform(lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo), size=n)
        return sample_scores(link, rng, n=n)
    if getattr(loss, "target", "score") == "link":  # per-list distributions times alpha
        raw = rng.uniform(0.1, 1.0, size=n)
        out, start = np.empty(n), 0
        for m in sizes:
            out[start : start + m] = (
                raw[start : start + m] / raw[start : start + m].sum() * loss.scaling.alpha
            )
            start += m
        return out
    return rng.integers(0, 4, size=n).astype(np.float64)  # graded labels, with ties


def padded(flat: np.ndarray, sizes, width: int = WIDTH, fill: float = PAD) -> np.ndarray:
    out = np.full((len(sizes), width), fill, dtype=np.float64)
    start = 0
    for b, m in enumerate(sizes):
        out[b, :m] = flat[start : start + m]
        start += m
    return out


def mask_of(sizes, width: int = WIDTH) -> np.ndarray:
    return np.arange(width)[None, :] < np.asarray(sizes)[:, None]


def list_batch(loss: Loss, rng, sizes=SIZES, width: int = WIDTH, scale: float = 1.5):
    """Padded ``[batch, list]`` scores/targets plus the flat real items and their sizes."""
    n = int(sum(sizes))
    y_flat = list_targets(loss, rng, n, [m for m in sizes if m])
    z_flat = scale * rng.normal(size=n)
    # padded scores hold garbage that must not leak into anything
    z = padded(z_flat, sizes, width, fill=np.nan)
    z[np.isnan(z)] = rng.choice([1e30, -np.inf, np.nan, 0.0], size=int(np.isnan(z).sum()))
    return z, padded(y_flat, sizes, width), mask_of(sizes, width), z_flat, y_flat


def class_batch(loss: Loss, rng, n: int = 7):
    """``[n, K]`` scores and targets (class indices for link-space targets)."""
    z = rng.normal(size=(n, K))
    if loss.target == "link":
        y = rng.integers(0, K, size=n).astype(np.float64)
    else:
        y = rng.normal(size=(n, K))
    return z, y


def t(x, dtype=torch.float64, grad=False):
    out = torch.as_tensor(np.asarray(x), dtype=dtype)
    return out.requires_grad_(grad) if grad else out
