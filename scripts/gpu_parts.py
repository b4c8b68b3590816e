"""Carry wheels larger than one device call allows, in parts, and put them back together there.

The device tool sends the working tree and the carried paths with each call, at most 64 MiB in
all; XGBoost's CUDA wheel is about 131 MB. Here (``split``) a wheel is cut into parts of at most
``--part-bytes`` and each part goes into its own folder ``.whl/cN`` (ignored by git), with a
manifest naming the whole file's size and SHA-256. There (``stash``, one call per part, while the
machine stays warm) each call copies the part it carried to a folder outside the repository;
``assemble`` joins the parts, checks size and SHA-256 and leaves the wheel, or says which parts
are missing. Small wheels (array-api-compat) travel whole in the last folder.

    python scripts/gpu_parts.py split .whl/dl/xgboost-*.whl --into .whl --part-bytes 44000000
    python scripts/gpu_parts.py stash .whl --to /tmp/selrank_parts       # on the device
    python scripts/gpu_parts.py assemble /tmp/selrank_parts --to /tmp/selrank_wheels
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

MANIFEST = "parts.json"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def split(
    wheel: Path, into: Path, part_bytes: int, extras: list[Path] = (), tag: str = "c"
) -> list[Path]:
    """Cut ``wheel`` into parts of at most ``part_bytes`` in ``into/c1``, ``into/c2``, ...;
    ``extras`` (small files) go whole into the last folder. Returns the folders."""
    if part_bytes <= 0:
        raise ValueError(f"part_bytes must be positive, got {part_bytes}")
    size = wheel.stat().st_size
    n = max(1, -(-size // part_bytes))
    manifest = {"file": wheel.name, "size": size, "sha256": sha256(wheel), "parts": n}
    folders = []
    with open(wheel, "rb") as f:
        for k in range(1, n + 1):
            folder = into / f"{tag}{k}"
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            (folder / f"{wheel.name}.part{k:02d}").write_bytes(f.read(part_bytes))
            (folder / MANIFEST).write_text(json.dumps(manifest))
            folders.append(folder)
    for extra in extras:
        shutil.copy2(extra, folders[-1] / extra.name)
    return folders


def stash(carried: Path, to: Path) -> list[str]:
    """Copy every part and extra file found under ``carried/*/`` to ``to`` (kept between calls
    while the machine is warm). Returns the names copied."""
    to.mkdir(parents=True, exist_ok=True)
    copied = []
    for path in sorted(carried.glob("*/*")):
        if path.is_file():
            shutil.copy2(path, to / path.name)
            copied.append(path.name)
    return copied


def assemble(parts: Path, to: Path) -> Path:
    """Join the parts in ``parts`` into ``to/<wheel>``, checking the manifest's size and SHA-256;
    copy the extra wheels beside it. Raises ``FileNotFoundError`` naming missing parts."""
    manifest_path = parts / MANIFEST
    if not manifest_path.is_file():
        raise FileNotFoundError(f"no {MANIFEST} in {parts}: no part has been stashed there yet")
    manifest = json.loads(manifest_path.read_text())
    name, n = manifest["file"], int(manifest["parts"])
    names = [f"{name}.part{k:02d}" for k in range(1, n + 1)]
    missing = [p for p in names if not (parts / p).is_file()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} of {n} parts missing in {parts}: {missing}")
    to.mkdir(parents=True, exist_ok=True)
    out = to / name
    with open(out, "wb") as f:
        for p in names:
            f.write((parts / p).read_bytes())
    size, digest = out.stat().st_size, sha256(out)
    if size != manifest["size"] or digest != manifest["sha256"]:
        out.unlink()
        raise ValueError(
            f"{name} reassembled to {size} bytes, SHA-256 {digest}; the manifest says "
            f"{manifest['size']} bytes, {manifest['sha256']}"
        )
    for extra in parts.glob("*.whl"):
        shutil.copy2(extra, to / extra.name)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("split")
    sp.add_argument("wheel", type=Path)
    sp.add_argument("--into", type=Path, default=Path(".whl"))
    sp.add_argument("--part-bytes", type=int, default=44_000_000)
    sp.add_argument("--extra", type=Path, nargs="*", default=[])
    st = sub.add_parser("stash")
    st.add_argument("carried", type=Path)
    st.add_argument("--to", type=Path, default=Path("/tmp/selrank_parts"))
    asm = sub.add_parser("assemble")
    asm.add_argument("parts", type=Path)
    asm.add_argument("--to", type=Path, default=Path("/tmp/selrank_wheels"))
    args = parser.parse_args(argv)
    if args.cmd == "split":
        for folder in split(args.wheel, args.into, args.part_bytes, args.extra):
            total = sum(p.stat().st_size for p in folder.iterdir())
            print(f"{folder}: {total:,} bytes")
        return 0
    if args.cmd == "stash":
        print("stashed:", ", ".join(stash(args.carried, args.to)) or "nothing")
        return 0
    try:
        print(f"assembled {assemble(args.parts, args.to)}")
    except (FileNotFoundError, ValueError) as err:
        print(f"gpu_parts: {err}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
