"""The documentation site: built with ``mkdocs build --strict``, its API pages complete and rendered.

The site is built once (about 15 s); the checks read its HTML:

* no Sphinx role (``:class:`...```, ``:func:``...) and no ``:math:`` is left as text on any
  page; the maths is marked up for MathJax (``arithmatex``) and MathJax is served by the site
  itself (a local script that exists, no CDN);
* every public name (``__all__``) of each module with an API page is documented on a page of
  the reference (an anchor ``module.name``, or the object's home module for a lazy re-export
  such as NeuralRanker);
* the losses' ``__all__`` is written out and equals the registry's classes.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API_PAGES = {
    "selrank.links": "links",
    "selrank.scalings": "scalings",
    "selrank.losses": "losses",
    "selrank.gbdt": "gbdt",
    "selrank.estimators": "estimators",
    "selrank.torch": "torch",
    "selrank.metrics": "metrics",
    "selrank.datasets": "datasets",
    "selrank.dwell": "dwell",
    "selrank.paper": "paper",
    "selrank.plots": "plots",
    "selrank.selection": "selection",
}
ROLE_TEXT = re.compile(r":(class|func|meth|mod|data|attr|math|obj|exc):(`|<code>)")


def test_losses_all_is_the_registry():
    import selrank.losses as losses
    from selrank.losses import classification as baselines

    names = [cls.__name__ for cls in baselines.BASELINES.values()]
    assert baselines.__all__ == ["BASELINES", *names]
    assert losses.__all__[-len(names) :] == names
    assert all(hasattr(losses, n) for n in losses.__all__)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocstrings")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    yield out
    shutil.rmtree(out, ignore_errors=True)


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("index.html"))


@pytest.mark.slow
def test_no_role_or_math_text_left(site):
    bad = {}
    for page in _pages(site):
        text = page.read_text(encoding="utf-8")
        found = ROLE_TEXT.findall(text) + re.findall(r"={5,}  +={5,}", text)  # + reST tables
        if found:
            bad[str(page.relative_to(site))] = len(found)
    assert not bad, f"Sphinx roles, :math: or reST table borders left as text: {bad}"
    api = (site / "api" / "losses" / "index.html").read_text(encoding="utf-8")
    assert 'class="arithmatex"' in api  # maths marked up for MathJax
    assert 'class="autorefs autorefs-internal"' in api  # roles became links


@pytest.mark.slow
def test_mathjax_is_served_by_the_site(site):
    for page in (site / "index.html", site / "api" / "links" / "index.html"):
        scripts = re.findall(r'<script src="([^"]+)"', page.read_text(encoding="utf-8"))
        mathjax = [s for s in scripts if "mathjax" in s.lower()]
        assert mathjax, f"{page}: no MathJax script"
        for src in mathjax:
            assert not re.match(r"(https?:)?//", src), f"{page}: MathJax from a CDN: {src}"
            assert (page.parent / src.split("?")[0]).resolve().is_file(), src
    fonts = site / "assets" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert len(list(fonts.glob("*.woff"))) > 10  # the CHTML fonts the script loads


@pytest.mark.slow
def test_every_public_name_is_documented(site):
    anchors: set[str] = set()
    for page in (site / "api").rglob("index.html"):
        anchors |= set(re.findall(r'id="(selrank[\w.]*)"', page.read_text(encoding="utf-8")))
    missing = []
    for module, _page in API_PAGES.items():
        try:
            mod = importlib.import_module(module)
        except ImportError:  # an optional dependency missing here
            continue
        for name in mod.__all__:
            if name.startswith("__"):
                continue
            home = getattr(getattr(mod, name), "__module__", module)  # a lazy re-export's home
            if f"{module}.{name}" not in anchors and f"{home}.{name}" not in anchors:
                missing.append(f"{module}.{name}")
    assert "selrank.estimators.neural.NeuralRanker" in anchors
    assert not missing, f"public names on no API page: {missing}"


@pytest.mark.slow
def test_formulas_page_and_navigation(site):
    math = (site / "math" / "index.html").read_text(encoding="utf-8")
    for k in range(1, 7):
        assert f'id="math-{k}"' in math
    home = (site / "index.html").read_text(encoding="utf-8")
    for page in ("distillation/", "install/", "contributing/", "architecture/", "math/"):
        assert f'href="{page}"' in home, page
    assert "pip install" in home
