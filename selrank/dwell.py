r"""Dwell-time workflow: choose the engaged band, build the capped SmeLU link, fit, hold out.

Dwell time (seconds until the next click) is modelled on ``y = log1p(seconds)``, the target
of :func:`selrank.datasets.load_dwell`. What matters is accuracy in the *engaged band* — the
dwell range of users who read the item — not on bounces (accidental clicks, a second or two)
or idle users (the tab stayed open for an hour). The capped SmeLU link (docs/math.md §1) puts all
of the loss's sensitivity there:

.. math::

    h(z) = \mathrm{clip}\!\left(\frac{z - \beta + c}{2c},\ 0,\ 1\right), \qquad
    h'(z) = \frac{1}{2c}\,\mathbb{1}[\,|z - \beta| < c\,],

with band :math:`[\beta - c, \beta + c] = [\text{lo}, \text{hi}]` in log1p seconds
(``alpha = 1``; the link depends on ``c / alpha`` only, so ``alpha`` adds nothing).

* :func:`suggest_band` picks the band from the observed dwell: quantiles, or the region where
  a three-component mixture (bounce, engaged, idle) says "engaged" (:func:`dwell_mixture`).
* :func:`dwell_link` turns a band into the SmeLU link; :func:`fit_dwell_model` fits a
  :class:`~selrank.estimators.SelectiveRegressor` with it, optionally with a within-session
  part (``session=..., within_session_weight=...``) that orders each session's clicks.
* :func:`time_holdout` holds out the last sessions of a period for early stopping and band
  choice (never the test period).

``docs/dwell.md`` walks through the workflow and the benchmark. Metrics are in
:mod:`selrank.metrics.dwell`.

Examples
--------
>>> import numpy as np
>>> from selrank.datasets import make_dwell
>>> data = make_dwell(5_000, seed=0)
>>> band = suggest_band(data.y, method="quantile", lower=0.1, upper=0.9)
>>> [round(v, 2) for v in band], [round(v) for v in band.seconds]
([1.85, 6.38], [5, 590])
>>> dwell_link(band)
SmeLU(alpha=1.0, beta=4.117..., c=2.264...)
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ._array import Array, is_numpy, to_numpy
from ._groups import as_groups
from ._validation import as_vector
from .links import SmeLU

if TYPE_CHECKING:
    from .estimators import SelectiveRegressor
    from .losses import Loss

__all__ = [
    "BAND_METHODS",
    "MAX_LOG1P_DWELL",
    "DwellBand",
    "DwellMixture",
    "dwell_mixture",
    "suggest_band",
    "dwell_link",
    "time_holdout",
    "fit_dwell_model",
    "outside_band_weights",
    "WITHIN_SESSION_GAMMA",
]

#: Methods of :func:`suggest_band`.
BAND_METHODS = ("auto", "mixture", "quantile")

_GRID = 4097  # points on which the mixture posterior is scanned for the band ends

#: Largest plausible dwell in log1p seconds: ``expm1(20)`` s is about 15 years. A larger value
#: means the input is raw seconds (or milliseconds), not ``log1p(seconds)``.
MAX_LOG1P_DWELL = 20.0

_log = logging.getLogger(__name__)


def _check_log1p_seconds(y: np.ndarray, name: str = "y_log") -> None:
    """Refuse dwell that cannot be log1p seconds (a value above :data:`MAX_LOG1P_DWELL`)."""
    top = float(y.max())
    if top > MAX_LOG1P_DWELL:
        raise ValueError(
            f"`{name}` looks like raw seconds, not log1p(seconds): as log1p seconds its largest value "
            f"{top:g} would be a dwell of about 10^{top / math.log(10.0):.0f} s (anything above "
            f"{MAX_LOG1P_DWELL:g}, about 15 years, cannot be a dwell). Pass np.log1p(seconds), as "
            "selrank.datasets.load_dwell's `y` is"
        )


def _dwell_vector(y: Any, name: str = "y_log") -> np.ndarray:
    arr = as_vector(y, name).astype(np.float64, copy=False)
    if arr.size == 0:
        raise ValueError(f"`{name}` is empty: expected at least one dwell")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"`{name}` must be finite; found {int(bad.sum())} NaN/inf value(s), first at row "
            f"{int(np.flatnonzero(bad)[0])}"
        )
    return arr


# --------------------------------------------------------------------------------------
# The band
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DwellBand(Sequence):
    """The engaged band ``[lo, hi]`` in log1p seconds; behaves as the pair ``(lo, hi)``.

    Parameters
    ----------
    lo, hi : float
        Finite, ``lo < hi``.
    method : str
        How the band was chosen (``"given"``, ``"quantile"``, ``"mixture"``); informational,
        not compared by ``==``.
    note : str
        Why that method was used when :func:`suggest_band` fell back from the mixture to
        quantiles (empty otherwise); informational, not compared by ``==``.

    Attributes
    ----------
    beta : float
        Band centre, the SmeLU shift.
    c : float
        Half width, the SmeLU half band (with ``alpha = 1``).
    seconds : tuple of float
        The band in seconds, ``(expm1(lo), expm1(hi))``.

    Examples
    --------
    >>> band = DwellBand(2.0, 5.0)
    >>> band.beta, band.c, tuple(band)
    (3.5, 1.5, (2.0, 5.0))
    >>> 4.0 in band, 6.0 in band
    (True, False)
    >>> band.smelu_params()
    {'alpha': 1.0, 'beta': 3.5, 'c': 1.5}
    >>> band.shares([1.0, 3.0, 4.0, 6.0])
    {'below': 0.25, 'inside': 0.5, 'above': 0.25}
    >>> DwellBand(5.0, 2.0)
    Traceback (most recent call last):
    ...
    ValueError: DwellBand needs lo < hi (log1p seconds); got lo=5.0, hi=2.0
    """

    lo: float
    hi: float
    method: str = field(default="given", compare=False)
    note: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        try:
            lo, hi = float(self.lo), float(self.hi)
        except (TypeError, ValueError):
            raise TypeError(
                f"DwellBand needs two numbers; got lo={self.lo!r}, hi={self.hi!r}"
            ) from None
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"DwellBand needs finite ends; got lo={lo!r}, hi={hi!r}")
        if not lo < hi:
            raise ValueError(f"DwellBand needs lo < hi (log1p seconds); got lo={lo!r}, hi={hi!r}")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    # the pair protocol: metrics and region functions take any (lo, hi) sequence
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i):
        return (self.lo, self.hi)[i]

    def __contains__(self, value) -> bool:
        """``value in band``: a dwell (log1p seconds) inside the band, ends included."""
        return bool(self.lo <= float(value) <= self.hi)

    @property
    def beta(self) -> float:
        return 0.5 * (self.lo + self.hi)

    @property
    def c(self) -> float:
        return 0.5 * (self.hi - self.lo)

    @property
    def seconds(self) -> tuple[float, float]:
        return (math.expm1(self.lo), math.expm1(self.hi))

    def contains(self, y_log: Array) -> np.ndarray:
        """Boolean mask of the dwells inside the band (both ends included)."""
        y = _dwell_vector(y_log)
        return (y >= self.lo) & (y <= self.hi)

    def shares(self, y_log: Array) -> dict[str, float]:
        """Fractions of ``y_log`` below, inside and above the band."""
        y = _dwell_vector(y_log)
        below, above = float(np.mean(y < self.lo)), float(np.mean(y > self.hi))
        return {"below": below, "inside": 1.0 - below - above, "above": above}

    def _repr_html_(self) -> str:
        from ._repr import html_table

        lo_s, hi_s = self.seconds
        rows = [
            ("log1p seconds", f"[{self.lo:.4g}, {self.hi:.4g}]"),
            ("seconds", f"[{lo_s:.4g}, {hi_s:.4g}]"),
            ("method", self.method),
        ]
        if self.note:
            rows.append(("note", self.note))
        return html_table(rows, title="DwellBand")

    def link(self, *, alpha: float = 1.0) -> SmeLU:
        """The capped SmeLU link of the band (:func:`dwell_link`)."""
        return dwell_link(self, alpha=alpha)

    def smelu_params(self) -> dict[str, float]:
        """``{"alpha": 1.0, "beta": ..., "c": ...}``: the link as plain parameters.

        ``SelectiveRegressor(link="smelu", loss_params=band.smelu_params())`` is the same
        model as ``SelectiveRegressor(link=band.link())``; both clone with scikit-learn.
        """
        return {"alpha": 1.0, "beta": self.beta, "c": self.c}


def _as_band(band: Any) -> DwellBand:
    if isinstance(band, DwellBand):
        return band
    if isinstance(band, str) or not isinstance(band, Sequence) or len(band) != 2:
        raise TypeError(
            f"`band` must be a DwellBand or a pair (lo, hi) in log1p seconds; got {band!r}"
        )
    return DwellBand(band[0], band[1])


# --------------------------------------------------------------------------------------
# Mixture of bounce, engaged and idle dwell
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DwellMixture:
    """A one-dimensional Gaussian mixture of log1p dwell (:func:`dwell_mixture`).

    Attributes
    ----------
    weights, means, sds : ndarray, shape (n_components,)
        Components sorted by mean (bounce first, idle last for three components).
    engaged : int
        Index of the engaged component: the one with the largest weight among those that are
        not a spike of identical dwells (standard deviation at most ten times its floor, e.g.
        clicks in the same instant, ``y = 0``); the heaviest one if all are.
    log_likelihood : float
        Mean log-likelihood per row at the fit.
    n_iter : int
    converged : bool
    data_range : (float, float)
        Smallest and largest dwell of the fit data (the band never leaves it).
    single_log_likelihood : float
        Mean log-likelihood per row of one Gaussian fitted to the same data.
    n_rows : int
        Rows of the fit data.
    """

    weights: np.ndarray
    means: np.ndarray
    sds: np.ndarray
    engaged: int
    log_likelihood: float
    n_iter: int
    converged: bool
    data_range: tuple[float, float]
    single_log_likelihood: float = math.nan
    n_rows: int = 0

    @property
    def bic_gain(self) -> float:
        r"""BIC of one Gaussian minus BIC of the mixture: positive when the data show components.

        :math:`2n(\ell_k - \ell_1) - (3k - 3)\log n`; on log-normal (one-component) dwell it is
        negative, and the mixture's "engaged" component is then an artefact of the fit.
        """
        k = self.weights.size
        n = max(self.n_rows, 1)
        return 2.0 * n * (self.log_likelihood - self.single_log_likelihood) - (
            3 * k - 3
        ) * math.log(n)

    def _log_joint(self, y: np.ndarray) -> np.ndarray:
        z = (y[:, None] - self.means[None, :]) / self.sds[None, :]
        return (
            np.log(self.weights)[None, :]
            - np.log(self.sds)[None, :]
            - 0.5 * z * z
            - 0.5 * math.log(2 * math.pi)
        )

    def posterior(self, y_log: Array) -> np.ndarray:
        """Responsibilities, shape ``(n, n_components)``: P(component | dwell)."""
        lj = self._log_joint(_dwell_vector(y_log))
        m = lj.max(axis=1, keepdims=True)
        lse = m + np.log(np.exp(lj - m).sum(axis=1, keepdims=True))
        return np.exp(lj - lse)

    def _repr_html_(self) -> str:
        from ._repr import html_table

        names = ["bounce", "engaged", "idle"] if self.weights.size == 3 else None
        rows = []
        for k in range(self.weights.size):
            label = names[k] if names else f"component {k}"
            if k == self.engaged:
                label += " (engaged)"
            rows.append((label, self.weights[k], self.means[k], self.sds[k]))
        return html_table(
            rows, header=("component", "weight", "mean (log1p s)", "sd"), title="DwellMixture"
        )

    def band(self, threshold: float = 0.5) -> DwellBand:
        """The contiguous dwell range around the engaged mean where P(engaged | dwell) >= ``threshold``.

        The ends are found on a fine grid over the data range and refined by linear
        interpolation of the posterior; an end with no crossing is the data's end.
        """
        if not (isinstance(threshold, int | float) and 0.0 < threshold < 1.0):
            raise ValueError(f"`threshold` must be in (0, 1); got {threshold!r}")
        lo_d, hi_d = self.data_range
        mu = float(np.clip(self.means[self.engaged], lo_d, hi_d))
        grid = np.linspace(lo_d, hi_d, _GRID)
        post = self.posterior(grid)[:, self.engaged] - threshold
        if self.posterior(np.array([mu]))[0, self.engaged] < threshold:
            raise ValueError(
                f"the engaged component (mean {mu:.3g}) is not the most likely one even at its own mean "
                f"(posterior below threshold={threshold}); the mixture does not separate an engaged band: "
                "use method='quantile' or a lower threshold"
            )
        k0 = int(np.searchsorted(grid, mu))
        k0 = min(k0, grid.size - 1)
        if post[k0] < 0:  # the grid point next to the mean may sit just outside
            k0 = max(k0 - 1, 0)
        out_left = np.flatnonzero(post[:k0] < 0)
        out_right = np.flatnonzero(post[k0:] < 0)
        lo = lo_d if out_left.size == 0 else _crossing(grid, post, int(out_left[-1]))
        hi = hi_d if out_right.size == 0 else _crossing(grid, post, k0 + int(out_right[0]) - 1)
        return DwellBand(lo, hi, method="mixture")


def _crossing(grid: np.ndarray, f: np.ndarray, i: int) -> float:
    """Zero of the linear interpolant of ``f`` between ``grid[i]`` and ``grid[i + 1]``."""
    a, b = f[i], f[i + 1]
    t = 0.5 if a == b else a / (a - b)
    return float(grid[i] + t * (grid[i + 1] - grid[i]))


def dwell_mixture(
    y_log: Array,
    *,
    n_components: int = 3,
    n_bins: int = 1024,
    max_iter: int = 10_000,
    tol: float = 1e-10,
) -> DwellMixture:
    r"""Fit a Gaussian mixture to log1p dwell by expectation–maximisation.

    Log dwell is close to a mixture of a narrow bump of bounces (about a second), a broad
    engaged component and a long idle tail. Three components (the default) model these; the
    engaged one is the heaviest. The fit is deterministic: means start at the 5 % … 95 %
    quantiles, standard deviations at ``std(y) / n_components``, equal weights; a standard
    deviation never falls below ``1e-3 · std(y)`` (a spike of identical dwells, e.g. clicks in
    the same instant, must not collapse a component to zero width).

    EM runs on the distinct values of ``y`` with their counts when there are at most
    ``n_bins`` of them (exact), otherwise on an ``n_bins`` histogram (bin centres weighted
    by counts). The bin width, range / ``n_bins``, is far below the width of any dwell
    component, and the histogram makes each iteration independent of the number of rows:
    overlapping components need a thousand or more iterations to converge (about 1 700 on
    the YOOCHOOSE sample; stopping at a few hundred moves the band's upper end by 0.4).

    Parameters
    ----------
    y_log : array-like, shape (n,)
        Observed dwell, log1p seconds.
    n_components : int
        At least 2.
    n_bins : int
        Histogram resolution (at least 64).
    max_iter : int
    tol : float
        Stop when the mean log-likelihood changes by less than ``tol``; ``converged`` says
        whether it did within ``max_iter``.

    Returns
    -------
    DwellMixture

    Raises
    ------
    ValueError
        Too few rows, constant dwell, or values above :data:`MAX_LOG1P_DWELL` (raw seconds
        given instead of ``log1p(seconds)``).

    Examples
    --------
    >>> from selrank.datasets import make_dwell
    >>> mix = dwell_mixture(make_dwell(5_000, seed=0).y)
    >>> mix.weights.round(2).tolist(), mix.engaged, mix.converged
    ([0.04, 0.85, 0.1], 1, True)
    """
    y = _dwell_vector(y_log)
    _check_log1p_seconds(y)
    if (
        isinstance(n_components, bool)
        or not isinstance(n_components, int | np.integer)
        or n_components < 2
    ):
        raise ValueError(f"`n_components` must be an int >= 2; got {n_components!r}")
    for name, v, least in (("max_iter", max_iter, 1), ("n_bins", n_bins, 64)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < least:
            raise ValueError(f"`{name}` must be an int >= {least}; got {v!r}")
    k = int(n_components)
    if y.size < 5 * k:
        raise ValueError(
            f"`y_log` has {y.size} rows; a {k}-component mixture needs at least {5 * k}"
        )
    spread = float(y.std())
    if spread == 0.0:
        raise ValueError(f"`y_log` is constant ({y[0]!r}); there is no band to find")
    values, counts = np.unique(y, return_counts=True)
    if values.size > n_bins:
        counts, edges = np.histogram(y, bins=int(n_bins))
        values = 0.5 * (edges[:-1] + edges[1:])
        values, counts = values[counts > 0], counts[counts > 0]
    w = counts.astype(np.float64) / y.size
    x = values[:, None]
    means = np.quantile(y, np.linspace(0.05, 0.95, k))
    sds = np.full(k, spread / k)
    weights = np.full(k, 1.0 / k)
    sd_floor = 1e-3 * spread
    ll_old = -math.inf
    converged = False
    n_iter = 0
    for _ in range(int(max_iter)):
        n_iter += 1
        z = (x - means) / sds
        lj = np.log(weights) - np.log(sds) - 0.5 * z * z
        m = lj.max(axis=1, keepdims=True)
        lse = m + np.log(np.exp(lj - m).sum(axis=1, keepdims=True))
        resp = np.exp(lj - lse) * w[:, None]
        ll = float(w @ lse[:, 0]) - 0.5 * math.log(2 * math.pi)
        nk = resp.sum(axis=0) + 1e-300
        weights = nk / nk.sum()
        means = (resp * x).sum(axis=0) / nk
        sds = np.maximum(np.sqrt((resp * (x - means) ** 2).sum(axis=0) / nk), sd_floor)
        if abs(ll - ll_old) < tol:
            converged = True
            break
        ll_old = ll
    order = np.argsort(means, kind="stable")
    weights, means, sds = weights[order], means[order], sds[order]
    # one Gaussian on the same (binned) data, for the BIC comparison
    mu1 = float(w @ values)
    var1 = max(float(w @ (values - mu1) ** 2), sd_floor**2)
    ll1 = float(w @ (-0.5 * (values - mu1) ** 2 / var1)) - 0.5 * math.log(2 * math.pi * var1)
    # a spike of identical dwells (clicks in the same instant: y = 0) is never the engaged read
    spread_out = sds > 10.0 * sd_floor
    engaged = (
        int(np.argmax(np.where(spread_out, weights, -1.0)))
        if spread_out.any()
        else int(np.argmax(weights))
    )
    return DwellMixture(
        weights=weights,
        means=means,
        sds=sds,
        engaged=engaged,
        log_likelihood=ll,
        n_iter=n_iter,
        converged=converged,
        data_range=(float(y.min()), float(y.max())),
        single_log_likelihood=ll1,
        n_rows=int(y.size),
    )


# --------------------------------------------------------------------------------------
# suggest_band, dwell_link
# --------------------------------------------------------------------------------------


def suggest_band(
    y_log: Array,
    *,
    method: str = "auto",
    lower: float = 0.1,
    upper: float = 0.9,
    n_components: int = 3,
    threshold: float = 0.5,
    min_coverage: float = 0.5,
) -> DwellBand:
    r"""Choose the engaged dwell band from observed dwell (log1p seconds).

    Parameters
    ----------
    y_log : array-like, shape (n,)
        Observed dwell of the *training* period, ``log1p(seconds)``. Never the test period.
        Raw seconds are refused (any value above :data:`MAX_LOG1P_DWELL` = 20, i.e. 15 years).
    method : {"auto", "mixture", "quantile"}
        * ``"auto"`` (default): the mixture band when the data separate an engaged component,
          otherwise the quantile band, with a ``UserWarning`` that says why. The mixture
          separates one when it beats a single Gaussian by BIC (:attr:`DwellMixture.bic_gain`
          > 0: log-normal dwell has no bounce or idle component to leave out) and its
          engaged component is the likeliest at its own mean. The returned band's
          ``method`` says which was used and ``note`` why it fell back.
        * ``"mixture"``: fit bounce / engaged / idle components (:func:`dwell_mixture`) and
          keep the dwell range where the engaged component is the most likely explanation
          (posterior >= ``threshold``). The ends sit where bounces, and idle users, become
          likelier than an engaged read — the valleys between the modes when there are
          valleys, the crossover of the tails otherwise. Raises when there is no such range.
        * ``"quantile"``: ``[q_lower, q_upper]`` of the dwell distribution: the middle
          ``upper − lower`` share of the clicks, whatever its shape.
    lower, upper : float
        Quantile levels for ``method="quantile"`` and the ``"auto"`` fallback,
        ``0 <= lower < upper <= 1``.
    n_components, threshold : int, float
        For the mixture.
    min_coverage : float
        Warn (``UserWarning``) when fewer than this share of the rows fall in the band: a
        band that narrow throws most of the data's information away (the loss sees every
        row outside it as "too short" or "too long", nothing more).

    Returns
    -------
    DwellBand
        With ``method`` set to ``"mixture"`` or ``"quantile"``.

    Raises
    ------
    ValueError
        NaN/inf or empty input, raw seconds instead of log1p seconds, ``lower >= upper``, a
        quantile band of zero width, or (``method="mixture"``) a mixture without an engaged
        band.

    Examples
    --------
    >>> from selrank.datasets import make_dwell
    >>> data = make_dwell(20_000, seed=0)
    >>> band = suggest_band(data.y)                  # mixture: bounces and idle users left out
    >>> band.method, [round(s) for s in band.seconds]
    ('mixture', [2, 565])
    >>> round(float(band.contains(data.y[data.idle]).mean()), 3)   # idle rows inside the band
    0.0
    >>> suggest_band(data.seconds)
    Traceback (most recent call last):
    ...
    ValueError: `y_log` looks like raw seconds, not log1p(seconds): ... Pass np.log1p(seconds), as selrank.datasets.load_dwell's `y` is
    >>> suggest_band(data.y, method="quantile", lower=0.9, upper=0.1)
    Traceback (most recent call last):
    ...
    ValueError: `lower` must be below `upper` (quantile levels in [0, 1]); got lower=0.9, upper=0.1
    """
    if not isinstance(method, str) or method not in BAND_METHODS:
        raise ValueError(f"`method` must be one of {list(BAND_METHODS)}; got {method!r}")
    if not (isinstance(min_coverage, int | float) and 0.0 <= min_coverage <= 1.0):
        raise ValueError(f"`min_coverage` must be in [0, 1]; got {min_coverage!r}")
    y = _dwell_vector(y_log)
    _check_log1p_seconds(y)
    if method == "quantile":
        band = _quantile_band(y, lower, upper)
    elif method == "mixture":
        band = dwell_mixture(y, n_components=n_components).band(threshold)
    else:
        _quantile_levels(lower, upper)  # bad levels are an error whichever band is chosen
        mixture, why = _mixture_band_or_reason(y, n_components, threshold)
        if mixture is not None:
            band = mixture
        else:
            quantile = _quantile_band(y, lower, upper)
            note = f"{why}; using the {lower}–{upper} quantile band"
            band = DwellBand(quantile.lo, quantile.hi, method="quantile", note=note)
            warnings.warn(
                f"suggest_band: {note} {tuple(round(v, 3) for v in band)} (log1p seconds) instead. "
                "Pass method='quantile' to choose it explicitly",
                UserWarning,
                stacklevel=2,
            )
        _log.info("suggest_band(method='auto') used the %s band %s", band.method, tuple(band))
    coverage = band.shares(y)["inside"]
    if coverage < min_coverage:
        warnings.warn(
            f"the suggested band {tuple(round(v, 3) for v in band)} holds only {coverage:.1%} of the rows "
            f"(min_coverage={min_coverage}); check the band before training on it",
            UserWarning,
            stacklevel=2,
        )
    return band


def _quantile_levels(lower, upper) -> None:
    for name, v in (("lower", lower), ("upper", upper)):
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float | np.floating)
            or not 0.0 <= v <= 1.0
        ):
            raise ValueError(f"`{name}` must be a quantile level in [0, 1]; got {v!r}")
    if not lower < upper:
        raise ValueError(
            f"`lower` must be below `upper` (quantile levels in [0, 1]); got lower={lower!r}, upper={upper!r}"
        )


def _quantile_band(y: np.ndarray, lower, upper) -> DwellBand:
    _quantile_levels(lower, upper)
    lo, hi = (float(v) for v in np.quantile(y, [lower, upper]))
    if not lo < hi:
        raise ValueError(
            f"the {lower}–{upper} quantile band of `y_log` has zero width (both ends {lo!r}); "
            "widen it or check the data"
        )
    return DwellBand(lo, hi, method="quantile")


def _mixture_band_or_reason(
    y: np.ndarray, n_components: int, threshold: float
) -> tuple[DwellBand | None, str]:
    """The mixture band, or ``None`` and why the mixture does not separate an engaged component."""
    if (
        isinstance(n_components, bool)
        or not isinstance(n_components, int | np.integer)
        or n_components < 2
    ):
        raise ValueError(f"`n_components` must be an int >= 2; got {n_components!r}")
    if y.size < 5 * int(n_components):
        return None, f"{y.size} rows are too few for a {int(n_components)}-component mixture"
    if float(y.std()) == 0.0:
        return None, "the dwell is constant"
    mix = dwell_mixture(y, n_components=n_components)
    if not mix.bic_gain > 0:
        return None, (
            f"one log-normal dwell component explains the data as well as {mix.weights.size} "
            f"(BIC gain {mix.bic_gain:.3g} <= 0): there are no bounce or idle components to leave out"
        )
    try:
        return mix.band(threshold), ""
    except ValueError as exc:
        if "does not separate" not in str(exc):
            raise
        mu = float(mix.means[mix.engaged])
        return (
            None,
            f"the mixture does not separate an engaged component (at its mean {mu:.3g} another one is likelier)",
        )


def dwell_link(band: Sequence[float], *, alpha: float = 1.0) -> SmeLU:
    r"""The capped SmeLU link that is sensitive exactly on ``band``.

    ``SmeLU(alpha, beta=(lo + hi) / 2, c=alpha * (hi - lo) / 2)``: slope :math:`1/(hi - lo)`
    inside the band, 0 outside. ``alpha`` is accepted for completeness; the link, the loss
    and a GBDT fit do not depend on it (only ``c / alpha``, the half width in log1p seconds,
    enters).

    Examples
    --------
    >>> link = dwell_link((2.0, 5.0))
    >>> link
    SmeLU(alpha=1.0, beta=3.5, c=1.5)
    >>> [float(v) for v in link.dh(np.array([1.0, 3.0, 6.0]))]   # sensitive inside only
    [0.0, 0.333..., 0.0]
    """
    b = _as_band(band)
    return SmeLU(alpha=alpha, beta=b.beta, c=float(alpha) * b.c)


# --------------------------------------------------------------------------------------
# Hold-out and fitting
# --------------------------------------------------------------------------------------


def time_holdout(session: Array, time: Array, *, fraction: float = 0.15) -> np.ndarray:
    """Mask of the rows of the sessions that start in the last ``fraction`` of the period.

    Use it to cut a validation part off the *training* period (for early stopping and for
    choosing the band) that lies later in time than what the model is fitted on, as the test
    period does; whole sessions stay on one side.

    Parameters
    ----------
    session : array-like, shape (n,)
        Session id per row (rows of a session need not be adjacent).
    time : array-like, shape (n,)
        Click time per row (any increasing unit).
    fraction : float
        Share of the sessions (by start time) to hold out, in (0, 1).

    Returns
    -------
    ndarray of bool, shape (n,)
        True for held-out rows.

    Examples
    --------
    >>> time_holdout([1, 1, 2, 3, 3, 4], [0.0, 5.0, 1.0, 7.0, 9.0, 8.0], fraction=0.5).tolist()
    [False, False, False, True, True, True]
    """
    if not (
        isinstance(fraction, int | float)
        and not isinstance(fraction, bool)
        and 0.0 < fraction < 1.0
    ):
        raise ValueError(f"`fraction` must be in (0, 1); got {fraction!r}")
    t = _dwell_vector(time, "time")
    s = to_numpy(
        session.to_numpy() if hasattr(session, "to_numpy") and not is_numpy(session) else session
    )
    if s.ndim != 1 or s.shape[0] != t.shape[0]:
        raise ValueError(
            f"`session` and `time` must both have shape ({t.shape[0]},); got {s.shape} and {t.shape}"
        )
    groups = as_groups(None, t.size, qid=s)
    start = np.minimum.reduceat(groups.to_grouped(t), groups.offsets[:-1])
    order = np.argsort(start, kind="stable")
    n_out = max(1, int(round(fraction * groups.n_groups)))
    held = np.zeros(groups.n_groups, dtype=bool)
    held[order[groups.n_groups - n_out :]] = True
    return groups.from_grouped(held[groups.row_group])


#: ``gamma`` of the default within-session part of :func:`fit_dwell_model`, the softmax
#: (ListNet) over each session, ``Listwise("constant", gamma=WITHIN_SESSION_GAMMA)``; chosen
#: on the YOOCHOOSE validation sessions (``benchmarks/dwell.py``, docs/dwell.md §7).
WITHIN_SESSION_GAMMA = 1.0


def _within_session_loss(loss):
    """The within-session group loss: the default ListNet, or a group loss given by object or name."""
    from .losses import Listwise, Loss, get_loss

    if loss is None:
        return Listwise("constant", gamma=WITHIN_SESSION_GAMMA)
    if not isinstance(loss, Loss | str):
        raise TypeError(
            f"`within_session_loss` must be a Loss or a loss name; got {type(loss).__name__}"
        )
    built = get_loss(loss)
    if built.structure != "group":
        raise ValueError(
            "`within_session_loss` must be a group loss (pairwise or listwise, over each session); "
            f"got {built!r}"
        )
    return built


def _refuse_missing_sessions(s: np.ndarray, name: str) -> None:
    """Refuse a missing session id (None, NaN, pandas' NA, an empty string), naming the row:
    the same check for every kind of id, as selrank.datasets.dwell_dataset makes."""
    if s.dtype.kind == "f":
        missing = np.isnan(s)
    elif s.dtype.kind in "OUS":
        missing = np.fromiter(
            (
                v is None
                or (isinstance(v, float) and v != v)
                or (isinstance(v, str | bytes) and not v.strip())
                or type(v).__name__ in ("NAType", "NaTType")
                for v in s.tolist()
            ),
            dtype=bool,
            count=s.size,
        )
    else:
        return
    if missing.any():
        bad = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"`{name}` has a missing session id at row {bad} ({s[bad]!r}; "
            f"{int(missing.sum())} of {s.size} rows have none): rows without a session cannot "
            "be grouped, and treating them as one session would mix unrelated users; drop them "
            "or give them ids"
        )


def _session_ids(session, n_rows: int, name: str) -> np.ndarray:
    """Per-row session ids, each session's rows adjacent (what the group losses need)."""
    if session is None:
        raise ValueError(
            f"`{name}` is required when within_session_weight > 0: one session id per row"
        )
    s = to_numpy(
        session.to_numpy() if hasattr(session, "to_numpy") and not is_numpy(session) else session
    )
    if s.ndim != 1 or s.shape[0] != n_rows:
        raise ValueError(
            f"`{name}` must hold one session id per row, shape ({n_rows},); got shape {s.shape}"
        )
    _refuse_missing_sessions(s, name)
    try:
        as_groups(None, n_rows, qid=s, require_contiguous=True)
    except ValueError as exc:
        raise ValueError(
            f"`{name}`: {exc}; sort the rows by session (load_dwell's rows already are)"
        ) from None
    return s


def _eval_sessions(eval_set, eval_session) -> tuple[list, list]:
    """``eval_set`` as a list of pairs and the validated session ids of each."""
    one_set = (
        isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple)
    )
    items = [eval_set] if one_set else list(eval_set)
    for k, item in enumerate(items):
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise TypeError(f"`eval_set[{k}]` must be an (X, y) pair")
    if eval_session is None:
        raise ValueError(
            "`eval_session` (session ids of each eval_set item) is required with `eval_set` when "
            "within_session_weight > 0: early stopping evaluates the within-session part too"
        )
    one = not isinstance(eval_session, list | tuple) or (
        len(eval_session) > 0 and np.ndim(eval_session[0]) == 0
    )
    sessions = [eval_session] if one else list(eval_session)
    if len(sessions) != len(items):
        raise ValueError(
            f"`eval_session` has {len(sessions)} entries for {len(items)} eval_set items"
        )
    groups = [
        _session_ids(s, _n_rows(Xe), f"eval_session[{k}]")
        for k, (s, (Xe, _)) in enumerate(zip(sessions, items))
    ]
    return items, groups


def _n_rows(X) -> int:
    shape = getattr(X, "shape", None)
    if shape is None:
        shape = np.shape(X)
    if len(shape) != 2:
        raise ValueError(f"`X` must be 2-D (rows, features); got shape {tuple(shape)}")
    return int(shape[0])


def fit_dwell_model(
    X: Array,
    y_log: Array,
    *,
    band: Sequence[float] | None = None,
    session: Array | None = None,
    within_session_weight: float = 0.0,
    within_session_loss: Loss | str | None = None,
    eval_set: Any = None,
    eval_session: Any = None,
    hessian_floor: float | None = None,
    outside_weight: float = 1.0,
    sample_weight: Array | None = None,
    **params: Any,
) -> SelectiveRegressor:
    r"""Fit a :class:`~selrank.estimators.SelectiveRegressor` with the capped SmeLU link of ``band``.

    With ``within_session_weight = 0`` (the default) the loss is the pointwise capped SmeLU,
    the recipe in ``docs/dwell.md``::

        SelectiveRegressor(link=dwell_link(band), **params).fit(X, y_log, eval_set=eval_set)

    With ``within_session_weight = λ > 0`` a within-session part is added (a
    :class:`~selrank.losses.Combined` loss, fitted with ``qid=session``):

    .. math::
        L = \sum_{\text{rows } i} D_{\text{SmeLU}}(\hat s_i, y_i)
            \;+\; \lambda \sum_{\text{sessions } S} L_{\text{session}}(\hat s_S, y_S)

    (the boosting gradients are those of these sums; early stopping monitors the estimator's
    mean loss, the SmeLU part per row plus λ times the session part per session).

    The pointwise part sets each prediction's level; the within-session part only sees
    differences of predictions inside a session and orders a session's clicks. On the
    YOOCHOOSE sample pointwise models rank a session's clicks worse than chance (the
    features' effects across and within sessions have opposite signs); the within-session
    part fixes that, **at a cost in overall error that grows with λ** (docs/dwell.md §7:
    the weight trades within-session ranking against error, it does not buy both).

    Parameters
    ----------
    X : array-like, shape (n, n_features)
    y_log : array-like, shape (n,)
        Observed dwell, log1p seconds.
    band : DwellBand or (lo, hi), optional
        Default: :func:`suggest_band` of ``y_log``.
    session : array-like, shape (n,), optional
        One session id per row, each session's rows adjacent (as :func:`~selrank.datasets.load_dwell`
        returns them). Required when ``within_session_weight > 0``; otherwise validated and
        not used (likewise ``eval_session`` and ``within_session_loss``).
    within_session_weight : float
        λ >= 0, the weight of the within-session part relative to the pointwise SmeLU.
    within_session_loss : Loss or str, optional
        The within-session group loss. Default: the softmax over each session's clicks
        (ListNet), ``Listwise("constant", gamma=WITHIN_SESSION_GAMMA)``; ``Pairwise(...)``
        (e.g. a capped SmeLU or Huber link on log-dwell differences,
        ``Pairwise("smelu", c=1.0, pairs="distinct")``) or a selective ``Listwise`` work too.
    eval_set : (X_val, y_val) or list of them, optional
        Validation data for early stopping (on the training loss); e.g. from
        :func:`time_holdout`.
    eval_session : array-like or list of them, optional
        Session ids of each ``eval_set`` item; required with ``eval_set`` when
        ``within_session_weight > 0``.
    hessian_floor : float, optional
        Floor of the GBDT Hessian as a fraction of the reference Hessian (default: the
        estimator's). ``h' = 0`` outside the band, so rows predicted outside it would
        otherwise take unbounded Newton steps.
    outside_weight : float
        Weight ω in [0, 1] of the rows whose observed dwell lies outside ``band`` (training
        rows and ``eval_set`` rows alike; see :func:`outside_band_weights`). 1 (the default)
        is the plain capped SmeLU, whose minimiser is the mean of the target *winsorised* to
        the band; 0 drops those rows, so the model estimates the mean dwell *given that it
        is in the band* — what an in-band error over the rows whose observed dwell is in the
        band (``selrank.metrics.dwell.band_error``) rewards — at a cost outside the band.
        Only with ``within_session_weight = 0``.
    sample_weight : array-like, shape (n,), optional
        Row weights (multiplied by the ``outside_weight`` of each row).
    **params
        Further :class:`~selrank.estimators.SelectiveRegressor` / LightGBM parameters
        (``n_estimators``, ``learning_rate``, ``num_leaves``, ``random_state``,
        ``num_threads``, ...).

    Returns
    -------
    SelectiveRegressor
        Fitted; ``predict`` gives log1p seconds. It clones (:func:`sklearn.base.clone`),
        saves and loads like any other.

    Raises
    ------
    ValueError
        A negative or non-finite ``within_session_weight``; ``session`` missing, of the wrong
        length or with a session's rows apart when it is needed; ``eval_set`` without
        ``eval_session``; a non-group ``within_session_loss``; ``link`` / ``loss`` /
        ``loss_params`` in ``params``; bad labels or bands; ``outside_weight`` outside
        [0, 1], below 1 together with a within-session part, or 0 with no dwell in the band.

    Examples
    --------
    >>> from selrank.datasets import make_dwell
    >>> data = make_dwell(2_000, seed=1)
    >>> model = fit_dwell_model(data.X, data.y, band=(2.0, 6.0), n_estimators=20, num_threads=1)
    >>> model.loss_.link
    SmeLU(alpha=1.0, beta=4.0, c=2.0)
    >>> session = np.repeat(np.arange(400), 5)          # five clicks per session
    >>> model = fit_dwell_model(data.X, data.y, band=(2.0, 6.0), session=session,
    ...                         within_session_weight=0.1, n_estimators=20, num_threads=1)
    >>> model.loss_
    Combined([Pointwise(link=SmeLU(alpha=1.0, beta=4.0, c=2.0), target='score'), Listwise(scaling=Constant(alpha=1.0, beta=0.0), gamma=1.0, target='score')], weights=[1.0, 0.1])
    >>> model.predict(data.X[:3]).shape
    (3,)
    """
    from .estimators import SelectiveRegressor
    from .losses import Combined, Pointwise

    if {"link", "loss", "loss_params"} & set(params):
        raise ValueError(
            "fit_dwell_model sets `link` (the capped SmeLU of `band`), `loss` and `loss_params` itself; "
            "use SelectiveRegressor directly for another loss"
        )
    if "group" in params or "eval_group" in params:
        raise ValueError(
            "fit_dwell_model takes `session` and `eval_session`, not `group` / `eval_group`"
        )
    if eval_session is not None and eval_set is None:
        raise ValueError("`eval_session` was given without `eval_set`")
    if isinstance(within_session_weight, bool) or not isinstance(
        within_session_weight, int | float | np.number
    ):
        raise TypeError(
            f"`within_session_weight` must be a number >= 0; got {within_session_weight!r}"
        )
    lam = float(within_session_weight)
    if not (math.isfinite(lam) and lam >= 0.0):
        raise ValueError(
            f"`within_session_weight` must be finite and >= 0; got {within_session_weight!r}"
        )
    b = suggest_band(y_log) if band is None else _as_band(band)
    omega = _outside_weight(outside_weight)
    if omega != 1.0 and lam > 0:
        raise ValueError(
            "`outside_weight` < 1 is not supported with a within-session part (within_session_weight > 0)"
        )
    if hessian_floor is not None:
        params["hessian_floor"] = hessian_floor
    n = _n_rows(X)
    if session is not None or lam > 0:
        session = _session_ids(session, n, "session")
    if within_session_loss is not None or lam > 0:
        within = _within_session_loss(
            within_session_loss
        )  # a bad loss is an error even when unused
    eval_groups = None
    if eval_set is not None and (eval_session is not None or lam > 0):
        eval_set, eval_groups = _eval_sessions(eval_set, eval_session)
    if lam == 0.0:
        model = SelectiveRegressor(link=dwell_link(b), **params)
        if omega == 1.0:
            return model.fit(X, y_log, eval_set=eval_set, sample_weight=sample_weight)
        w = outside_band_weights(y_log, b, omega)
        if sample_weight is not None:
            w = w * _dwell_vector(sample_weight, "sample_weight")
        eval_w = None
        if eval_set is not None:
            items = (
                [eval_set]
                if isinstance(eval_set, tuple)
                and len(eval_set) == 2
                and not isinstance(eval_set[0], tuple)
                else list(eval_set)
            )
            eval_set, eval_w = items, [outside_band_weights(ye, b, omega) for _, ye in items]
        return model.fit(X, y_log, eval_set=eval_set, sample_weight=w, eval_sample_weight=eval_w)

    loss = Combined([Pointwise(dwell_link(b)), within], weights=[1.0, lam])
    # link=None: the loss object carries the link (the estimator's default link would clash)
    model = SelectiveRegressor(loss=loss, link=None, **params)
    return model.fit(
        X, y_log, qid=session, eval_set=eval_set, eval_qid=eval_groups, sample_weight=sample_weight
    )


def outside_band_weights(y_log: Array, band: Sequence[float], outside_weight: float) -> np.ndarray:
    """Row weights: 1 for an observed dwell inside ``band`` (ends included), ``outside_weight`` outside.

    Examples
    --------
    >>> outside_band_weights([0.5, 2.0, 4.0, 7.0], (1.0, 6.0), 0.25).tolist()
    [0.25, 1.0, 1.0, 0.25]
    """
    omega = _outside_weight(outside_weight)
    inside = _as_band(band).contains(_dwell_vector(y_log))
    if omega == 0.0 and not inside.any():
        raise ValueError(
            "no observed dwell lies in the band: with outside_weight=0 every row has weight 0"
        )
    return np.where(inside, 1.0, omega)


def _outside_weight(outside_weight) -> float:
    if isinstance(outside_weight, bool) or not isinstance(outside_weight, int | float | np.number):
        raise TypeError(f"`outside_weight` must be a number in [0, 1]; got {outside_weight!r}")
    omega = float(outside_weight)
    if not 0.0 <= omega <= 1.0:
        raise ValueError(f"`outside_weight` must be in [0, 1]; got {outside_weight!r}")
    return omega
