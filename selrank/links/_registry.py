"""The registry of links by name (:data:`LINKS`) and :func:`get_link`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._validation import lookup
from ._base import Link
from ._callable import CallableLink
from ._catalogue import Exp, Huber, Identity, NegExp, Sigmoid, Sign, Sinh, SmeLU, Step
from ._composite import CompositeSigmoid, Logit
from ._piecewise import Piecewise

#: Registry of links by name. Values build a link from keyword parameters.
LINKS: dict[str, Callable[..., Link]] = {
    "identity": Identity,
    "sigmoid": Sigmoid,
    "exp": Exp,
    "negexp": NegExp,
    "sinh": Sinh,
    "logit": Logit,
    "smelu": SmeLU,
    "huber": Huber,
    "step": Step,
    "sign": Sign,
    "piecewise": Piecewise,
    "composite_sigmoid": CompositeSigmoid,
}


def get_link(name: str | Link | Callable, **params: Any) -> Link:
    """Build a link by registry name, or pass a :class:`Link` / callable through.

    Parameters
    ----------
    name : str, Link or callable
        A key of :data:`LINKS`, a link instance (returned unchanged; ``params`` must then be
        empty) or a callable ``h`` (wrapped in :class:`CallableLink` with ``params``).
    **params
        Constructor parameters (``alpha``, ``beta``, ``cap``, ``c``, ``delta``, ...).

    Raises
    ------
    ValueError
        Unknown name, or bad parameters (the message names the parameter).

    Examples
    --------
    >>> get_link("sigmoid", beta=1.0)
    Sigmoid(alpha=1.0, beta=1.0)
    >>> get_link("tanh")
    Traceback (most recent call last):
    ...
    ValueError: unknown link 'tanh'; choose one of ['composite_sigmoid', 'exp', ...]
    """
    if callable(name) and not isinstance(name, str | Link):
        return CallableLink(name, **params)
    return lookup(
        LINKS, name, "link", instance_of=Link, accepts="a name, a Link or a callable", **params
    )
