"""Regenerate ``selrank/gbdt/_lightgbm_params.py``, the local table of LightGBM's parameter names.

selrank uses no private LightGBM name at run time (issue 31); the parameter table it checks
keyword arguments against is therefore a copy, written by this script from LightGBM's own
table (its C API ``LGBM_DumpParamAliases``, reached here through the Python package). Run it
after upgrading LightGBM and commit the result::

    python scripts/lightgbm_param_table.py
"""

from __future__ import annotations

import pprint
from pathlib import Path

import lightgbm as lgb

HEADER = '''"""LightGBM's parameter names and their aliases (generated; do not edit).

Written by ``scripts/lightgbm_param_table.py`` from LightGBM {version}'s own table, so the
estimators' typo check needs no private LightGBM name at run time. A parameter missing here
(one added by a later LightGBM) is refused as unknown: regenerate the table.
"""

from __future__ import annotations

#: The LightGBM version the table was read from.
LIGHTGBM_VERSION = {version!r}

#: ``{{parameter: (parameter, alias, ...)}}``, as LightGBM's ``LGBM_DumpParamAliases`` gives it.
PARAMETER_ALIASES: dict[str, tuple[str, ...]] = '''


def main() -> None:
    table = lgb.basic._ConfigAliases._get_all_param_aliases()
    table = {k: tuple(v) for k, v in sorted(table.items())}
    out = Path(__file__).resolve().parents[1] / "selrank" / "gbdt" / "_lightgbm_params.py"
    text = HEADER.format(version=lgb.__version__) + pprint.pformat(table, width=96) + "\n"
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(table)} parameters)")


if __name__ == "__main__":
    main()
