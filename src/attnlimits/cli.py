"""Command line: ``attnlimits reproduce limitations`` and friends.

Heavy imports (torch, transformers) happen inside the commands, so ``--help`` is instant. Bad
input of any kind ends in one clear line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Measure where softmax attention runs out of resolution.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
reproduce = typer.Typer(help="Reproduce a paper's experiments end to end.", no_args_is_help=True)
app.add_typer(reproduce, name="reproduce")
demo = typer.Typer(help="Demonstrations on real models.", no_args_is_help=True)
app.add_typer(demo, name="demo")


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def _numbers(text: str | None, kind: type, name: str) -> tuple | None:
    """Parse a comma-separated list option such as ``--lengths 32,64,128``."""
    if text is None:
        return None
    try:
        return tuple(kind(v) for v in text.split(",") if v.strip())
    except ValueError:
        _fail(f"--{name} takes comma-separated numbers, got {text!r}")
    return None


Model = Annotated[
    str,
    typer.Option(help="Named model (smollm2-135m, gpt2, minilm-l6), hub id, or local folder."),
]
Text = Annotated[
    Path | None,
    typer.Option(help="Plain-text book; default: War and Peace ($ATTNLIMITS_TEXT, or cached)."),
]
Device = Annotated[str, typer.Option(help="cpu or cuda.")]
Quick = Annotated[bool, typer.Option(help="Few windows and small grids (CI smoke run).")]


@reproduce.command("limitations")
def reproduce_limitations(
    model: Model = "smollm2-135m",
    text: Text = None,
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results/limitations"),
    device: Device = "cpu",
    quick: Quick = False,
    windows: Annotated[int | None, typer.Option(help="Token windows of the book.")] = None,
    x_source: Annotated[
        list[str] | None,
        typer.Option(help="Vectors playing x_i (repeatable): values, keys, hidden."),
    ] = None,
    lengths: Annotated[
        str | None, typer.Option(help="Sequence lengths L, e.g. 32,64,128 (Alg. 1, 3).")
    ] = None,
    n: Annotated[int | None, typer.Option(help="N of Alg. 1 (paper: 5).")] = None,
    temperatures: Annotated[
        str | None, typer.Option(help="Temperatures T of Alg. 5, e.g. 0.01,0.1,1.")
    ] = None,
) -> None:
    """Mudarisov et al. (2025): Algorithms 1–5, Figures 2a–c, 3, 4, and a claims report."""
    from attnlimits.experiments import limitations

    try:
        config = limitations.LimitationsConfig.preset(
            quick=quick,
            model=model,
            text=text,
            device=device,
            windows=windows,
            x_sources=tuple(x_source) if x_source else None,
            lengths=_numbers(lengths, int, "lengths"),
            n_alg1=n,
            temperatures=_numbers(temperatures, float, "temperatures"),
        )
        report = limitations.run(config, out)
    except (ValueError, OSError) as err:  # bad input, unreachable model or text
        _fail(str(err))
    typer.echo(f"report: {report}")


@reproduce.command("softmax-not-enough")
def reproduce_softmax_not_enough(
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results/softmax_not_enough"),
    seeds: Annotated[int | None, typer.Option(help="Seeds (default 10; 2 with --quick).")] = None,
    normalizers: Annotated[
        str | None,
        typer.Option(help="Cross-normaliser table, e.g. softmax,adaptive,ssmax (with softmax)."),
    ] = None,
    device: Device = "cpu",
    quick: Quick = False,
    temperature_fit: Annotated[
        bool, typer.Option(help="Refit the adaptive-temperature polynomial (App. F).")
    ] = True,
) -> None:
    """Veličković et al. (2025): max retrieval, adaptive temperature, dispersion, claims report."""
    from attnlimits.experiments import softmax_not_enough as sne

    try:
        names = tuple(v.strip() for v in normalizers.split(",") if v.strip()) if normalizers else ()
        config = sne.SoftmaxNotEnoughConfig(
            quick=quick,
            seeds=seeds if seeds is not None else (2 if quick else 10),
            normalizers=names,
            device=device,
            temperature_fit=temperature_fit,
        )
        report = sne.run(config, out)
    except (ValueError, OSError) as err:
        _fail(str(err))
    typer.echo(f"report: {report}")


@demo.command("long-context")
def demo_long_context(
    model: Model = "smollm2-135m",
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results/long_context"),
    device: Device = "cpu",
    quick: Quick = False,
    prompts: Annotated[int | None, typer.Option(help="Prompts per list length.")] = None,
) -> None:
    """Max-finding prompts of growing length: softmax vs adaptive temperature (inference only)."""
    from attnlimits.experiments import long_context as lc

    try:
        fields: dict[str, object] = {"model": model, "device": device}
        if prompts is not None:
            fields["prompts"] = prompts
        config = lc.LongContextConfig.quick(**fields) if quick else lc.LongContextConfig(**fields)  # type: ignore[arg-type]
        report = lc.run_long_context(config, out)
    except (ValueError, OSError) as err:
        _fail(str(err))
    typer.echo(f"report: {report}")


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
