"""Griffe extension for the API reference: Sphinx roles and maths in docstrings, rendered.

selrank's docstrings are NumPy style with Sphinx roles (``:class:`Foo```, ``:func:`bar```,
``:meth:``, ``:mod:``, ``:data:``, ``:attr:``) and maths (``:math:`x^2``` and ``.. math::``
blocks), which mkdocstrings would show as literal text. Loaded by mkdocstrings (``extensions``
in mkdocs.yml), this rewrites every docstring of the package before it is rendered:

* a role becomes a cross-reference to the object's entry in the API reference (the name is
  resolved in the docstring's scope, as Sphinx does: ``~`` keeps the last component as the
  title, ``Title <target>`` sets the title); a target that is on no page (a private helper, a
  NumPy or scikit-learn name) is shown as code, without a dead link;
* ``:math:`...``` becomes ``$...$`` and a ``.. math::`` block becomes a ``$$ ... $$`` block,
  both rendered by pymdownx.arithmatex and the MathJax copy served with the site
  (docs/assets/mathjax/, no CDN);
* ``docs/math.md §N`` becomes a link to that section of the formulas page;
* a reST simple table (``=====  =====`` borders) becomes a Markdown table.

tests/test_h23a_api_docs.py builds the site and checks that no role or ``:math:`` text is left.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|data|attr|obj|exc|const|ref):`([^`]+)`")
MATH = re.compile(r":math:`([^`]+)`")
MATH_CITE = re.compile(r"docs/math\.md §(\d)((?:[–-]\d)?)")
DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<rest>.*)$")
BORDER = re.compile(r"^(?P<indent>[ \t]*)=+(?:  +=+)+[ \t]*$")


class SphinxRolesToMarkdown(griffe.Extension):
    """Rewrite Sphinx roles and maths of every docstring of a loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        index: dict[str, list[str]] = {}
        objects = list(_walk(pkg, set()))
        for obj in objects:
            index.setdefault(obj.name, []).append(obj.path)
        for obj in objects:
            if obj.docstring is not None:
                obj.docstring.value = convert(obj.docstring.value, obj, index, pkg)
                obj.docstring.__dict__.pop("parsed", None)  # a cached parse of the old text


def _walk(obj: griffe.Object, seen: set[str]):
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in obj.members.values():
        if member.is_alias:
            continue
        yield from _walk(member, seen)  # type: ignore[arg-type]


def _exists(path: str, pkg: griffe.Module) -> bool:
    if path == pkg.path:
        return True
    if not path.startswith(pkg.path + "."):
        return False
    try:
        pkg[path[len(pkg.path) + 1 :]]
    except Exception:  # KeyError, or an alias that does not resolve
        return False
    return True


def resolve(
    target: str, obj: griffe.Object, index: dict[str, list[str]], pkg: griffe.Module
) -> str:
    """Full dotted path of a role's target, seen from ``obj`` (best effort)."""
    target = target.lstrip(".").removesuffix("()")
    full = target
    if not target.startswith(pkg.path):
        head, _, rest = target.partition(".")
        scope: griffe.Object | None = obj
        while scope is not None:
            try:
                path = scope.resolve(head)
            except Exception:  # griffe's NameResolutionError and alias errors alike
                scope = scope.parent
                continue
            full = f"{path}.{rest}" if rest else path
            break
        else:
            if rest:  # a dotted name outside the package (numpy.ndarray, lightgbm.train)
                return target
    if _exists(full, pkg):
        return full
    # a name the package re-exports lazily (selrank.SelectiveRanker) or a bare name of another
    # module: the one public object of that name, if there is exactly one
    public = [c for c in index.get(full.rpartition(".")[2], []) if "._" not in c]
    return public[0] if len(public) == 1 else full


def _role(
    match: re.Match, obj: griffe.Object, index: dict[str, list[str]], pkg: griffe.Module
) -> str:
    kind, text = match.group(1), match.group(2).strip()
    explicit = re.fullmatch(r"(.+?)\s*<([^>]+)>", text)
    if explicit:
        title, target = explicit.group(1), explicit.group(2)
    else:
        target = text.lstrip("!")
        title = target.lstrip("~").rpartition(".")[2] if target.startswith("~") else target
        target = target.lstrip("~")
    if kind in ("func", "meth") and not title.endswith(")"):
        title += "()"
    if text.startswith("!"):
        return f"`{title}`"
    full = resolve(target, obj, index, pkg)
    # optional: a target rendered on no page is shown as code (autorefs leaves a <span>)
    return f'<autoref optional identifier="{full}"><code>{title}</code></autoref>'


def _math_blocks(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = DIRECTIVE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group("indent")
        body = [m.group("rest")] if m.group("rest").strip() else []
        i += 1
        while i < len(lines) and (
            not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)
        ):
            if not lines[i].strip() and body and i + 1 < len(lines):
                # a blank line ends the block unless the next line is still indented deeper
                nxt = lines[i + 1]
                if not nxt.strip() or len(nxt) - len(nxt.lstrip()) <= len(indent):
                    break
            body.append(lines[i].strip())
            i += 1
        body = [b for b in body if b]
        out.extend(["", f"{indent}$$", *(f"{indent}{b}" for b in body), f"{indent}$$", ""])
    return "\n".join(out)


def _simple_tables(text: str) -> str:
    """reST simple tables (``=====  =====`` borders, one header row) as Markdown tables."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = BORDER.match(lines[i])
        ends = [j for j in range(i + 1, len(lines)) if lines[j].strip() == lines[i].strip()]
        if not m or not ends:
            out.append(lines[i])
            i += 1
            continue
        spans = [(c.start(), c.end()) for c in re.finditer(r"=+", lines[i])]
        starts = [a for a, _ in spans]

        def cells(line: str, starts: list[int] = starts) -> list[str]:
            bounds = [*starts[1:], len(line) + 1]
            return [line[a:b].strip() for a, b in zip(starts, bounds)]

        if ends[0] == i + 2 and len(ends) > 1:  # border, one header row, border, body, border
            header, body_start, body_end = cells(lines[i + 1]), ends[0] + 1, ends[1]
        else:  # no header row: border, body, border
            header, body_start, body_end = [""] * len(starts), i + 1, ends[0]
        rows: list[list[str]] = []
        for line in lines[body_start:body_end]:
            if not line.strip():
                continue
            row = cells(line)
            if rows and not row[0]:  # a continuation line of the row above
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], row)]
            else:
                rows.append(row)
        indent = m.group("indent")
        out.append("")
        out.append(indent + "| " + " | ".join(header) + " |")
        out.append(indent + "|" + "---|" * len(header))
        out.extend(indent + "| " + " | ".join(r) + " |" for r in rows)
        out.append("")
        i = body_end + 1
    return "\n".join(out)


def convert(text: str, obj: griffe.Object, index: dict[str, list[str]], pkg: griffe.Module) -> str:
    """The docstring ``text`` of ``obj`` with roles, maths and formula citations rewritten."""
    text = _simple_tables(_math_blocks(text))
    text = MATH.sub(lambda m: f"${m.group(1).strip()}$", text)
    text = ROLE.sub(lambda m: _role(m, obj, index, pkg), text)
    return MATH_CITE.sub(
        lambda m: f"[docs/math.md §{m.group(1)}{m.group(2)}][math-{m.group(1)}]", text
    )
