"""``python -m attnlimits.errata [NAME]``: list the errata checks, or run one."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import attnlimits.errata as package


def available() -> list[str]:
    """Names of the errata modules (each has a ``main()``)."""
    return sorted(
        m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    names = available()
    if not args:
        print("errata checks:", *names, sep="\n  ")
        return 0
    name = args[0].replace("-", "_")
    if name not in names:
        print(f"unknown erratum {args[0]!r}; choose one of: {', '.join(names)}", file=sys.stderr)
        return 2
    importlib.import_module(f"attnlimits.errata.{name}").main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
