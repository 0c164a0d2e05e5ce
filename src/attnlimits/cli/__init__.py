"""Command line: ``attnlimits reproduce limitations`` and friends.

Every command follows one path: options are parsed and typed here, the experiment's ``Config``
checks them (bad input ends before any folder, model or text is touched), the device is
checked, then :func:`attnlimits.experiments.skeleton.run` does the work. Heavy imports (torch,
transformers) happen inside the commands, so ``--help`` is instant. Bad input of any kind ends
in one line on stderr and exit code 2, never a traceback (unless ``--traceback`` or
``ATTNLIMITS_TRACEBACK=1`` asks for it); Ctrl-C ends with one line saying what was saved and
how to resume (exit 130).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from attnlimits.cli._budget import Yes, check_models
from attnlimits.cli._errors import (
    OneLineApp,
    OneLineGroup,
    no_empty_folders_left,
    one_line_warnings,
)
from attnlimits.cli._errors import fail as _fail
from attnlimits.cli._errors import root_options as _root_options
from attnlimits.cli._options import (
    AllowIncomplete,
    Beyond,
    Device,
    Dtype,
    Fresh,
    Model,
    Quick,
    Text,
)
from attnlimits.cli._options import names as _names
from attnlimits.cli._options import numbers as _numbers
from attnlimits.cli._options import path as _path
from attnlimits.cli._options import repeated as _repeated
from attnlimits.cli._options import specs as _specs
from attnlimits.cli.clrs_text import command as clrs_text_command
from attnlimits.cli.report import report as report_command
from attnlimits.cli.sweep import sweep as sweep_command
from attnlimits.cli.view import view as view_command

app = OneLineApp(  # once the command is over, Ctrl-C is ignored (cli/_errors.py)
    cls=OneLineGroup,  # parse errors: one error line, exit 2 (cli/_errors.py)
    help="Measure where softmax attention runs out of resolution.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.callback()(_root_options)  # its own options: --traceback (cli/_errors.py)
reproduce = typer.Typer(help="Reproduce a paper's experiments end to end.", no_args_is_help=True)
app.add_typer(reproduce, name="reproduce")
demo = typer.Typer(help="Demonstrations on real models.", no_args_is_help=True)
app.add_typer(demo, name="demo")


def _config(config_type: Any, quick: bool, options: dict[str, Any], flags: dict[str, str]) -> Any:
    """The experiment's Config: preset first (``--quick``), the user's explicit options win.

    An error names the user's option (``flags``: Config field -> option) where it has one;
    what the message quotes (``'logn:train_length=0'``, a value) stays as the user typed it.
    """
    given = {k: v for k, v in options.items() if v is not None}
    try:
        if inspect.ismethod(getattr(config_type, "preset", None)):  # presets, then the user
            return config_type.preset(quick=quick, **given)
        return config_type.quick(**given) if quick else config_type(**given)
    except (ValueError, TypeError) as err:
        parts = re.split(r"('[^'\s]*')", str(err))  # odd parts: quoted, left alone
        for i in range(0, len(parts), 2):
            for field, flag in flags.items():
                parts[i] = re.sub(rf"(?<![-\w]){field}\b", flag, parts[i])
        _fail("".join(parts))


def skeleton_config(name: str) -> Any:
    """The Config class of the experiment ``name``."""
    from attnlimits.experiments import skeleton

    return skeleton.get(name).config


def _check_device(config: Any) -> None:
    """The Config's device exists here (checked before any folder or model is touched)."""
    device = getattr(config, "device", None)
    if device is not None:
        from attnlimits.capture import check_device

        try:
            check_device(device)
        except ValueError as err:
            _fail(str(err))


def _run(
    name: str,
    options: dict[str, Any],
    *,
    quick: bool,
    out: Path,
    fresh: bool,
    flags: dict[str, str] | None = None,
    config: Any = None,
    yes: bool = False,
) -> None:
    """Config, device check, then the skeleton's runner, with one-line errors and Ctrl-C."""
    from attnlimits.experiments import skeleton

    experiment = skeleton.get(name)
    names = {k: "--" + k.replace("_", "-") for k in options} | (flags or {})
    if config is None:
        config = _config(experiment.config, quick, options, names)
    _check_device(config)
    try:
        with one_line_warnings(), no_empty_folders_left(out):
            report = skeleton.run(experiment, config, out, fresh=fresh, yes=yes)
    except KeyboardInterrupt:
        from attnlimits.experiments.store import ResultStore

        store = ResultStore(out) if out.exists() else None  # what is on disk, of any kind
        counts = {"part": store.n_parts(), "checkpoint": store.n_checkpoints()} if store else {}
        saved = " and ".join(f"{n} {kind}(s)" for kind, n in counts.items() if n)
        if saved:
            _fail(f"interrupted: {saved} saved in {out}; rerun the command to resume", 130)
        _fail("interrupted before anything was saved", 130)
    except (ValueError, OSError) as err:  # bad input, unreachable model or text, busy folder
        _fail(str(err))
    typer.echo(f"report: {report}")


Models = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        help="Named model (smollm2-135m, gpt2, minilm-l6), hub id, or local folder; repeat it "
        "for several models side by side (default: smollm2-135m and minilm-l6).",
    ),
]
#: The models ``reproduce limitations`` runs when none is given (issue 12: both real models).
LIMITATIONS_MODELS = ("smollm2-135m", "minilm-l6")


@reproduce.command("limitations")
def reproduce_limitations(
    model: Models = None,
    text: Text = None,
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results/limitations"),
    device: Device = None,
    dtype: Dtype = None,
    quick: Quick = False,
    fresh: Fresh = False,
    yes: Yes = False,
    windows: Annotated[
        int | None, typer.Option(help="Token windows of the book (default 2).")
    ] = None,
    placement: Annotated[
        str | None,
        typer.Option(help="Windows spread over the book (spread, default) or consecutive (start)."),
    ] = None,
    mc_samples: Annotated[
        int | None, typer.Option(help="Random I_N per row for E exact (Monte Carlo; default 16).")
    ] = None,
    x_source: Annotated[
        list[str] | None,
        typer.Option(help="Vectors playing x_i: values, keys, hidden (repeatable or a,b)."),
    ] = None,
    lengths: Annotated[
        str | None, typer.Option(help="Sequence lengths L, e.g. 32,64,128 (Alg. 1, 3).")
    ] = None,
    n: Annotated[int | None, typer.Option(help="N of Alg. 1 (paper: 5).")] = None,
    temperatures: Annotated[
        str | None, typer.Option(help="Temperatures T of Alg. 5, e.g. 0.01,0.1,1.")
    ] = None,
    allow_incomplete_weights: AllowIncomplete = None,
) -> None:
    """Mudarisov et al. (2025): Algorithms 1–5, Figures 2a–c, 3, 4, and a claims report.

    With several models (the default: SmolLM2-135M and MiniLM-L6) each runs into its own
    folder under --out, and --out/report.md puts their claims side by side.
    """
    models = list(_repeated(model, "model", split=False) or LIMITATIONS_MODELS)
    options = {
        "model": models[0],
        "text": _path(text, "text"),
        "device": device,
        "dtype": dtype,
        "windows": windows,
        "placement": placement,
        "mc_samples": mc_samples,
        "x_sources": _repeated(x_source, "x-source"),
        "lengths": _numbers(lengths, int, "lengths"),
        "n_alg1": n,
        "temperatures": _numbers(temperatures, float, "temperatures"),
        "allow_incomplete_weights": allow_incomplete_weights,
    }
    flags = {"n_alg1": "--n", "x_sources": "--x-source"}
    if len(models) == 1:
        _run("limitations", options, quick=quick, out=out, fresh=fresh, flags=flags, yes=yes)
        return
    from attnlimits.experiments.limitations.side_by_side import model_folder, write_side_by_side

    names = {"model": "--model"} | {k: "--" + k.replace("_", "-") for k in options} | flags
    configs = {m: _config(skeleton_config("limitations"), quick, options | {"model": m}, names)
               for m in models}  # fmt: skip  # every model's settings checked before any work
    _check_device(configs[models[0]])
    runs = {m: out / model_folder(m) for m in models}
    check_models("limitations", configs, yes, out, [p.name for p in runs.values()])  # models,
    # cost, --out: before any runs
    with no_empty_folders_left(out):  # a failed first model leaves no empty --out behind
        for m in models:
            typer.echo(f"{m}: {runs[m]}")
            _run(
                "limitations",
                options | {"model": m},
                quick=quick,
                out=runs[m],
                fresh=fresh,
                flags=flags,
                config=configs[m],
                yes=True,
            )
    try:  # the joined report: a full disk or Ctrl-C here ends as in a run
        with one_line_warnings():
            report = write_side_by_side(out, runs)
    except KeyboardInterrupt:
        _fail(f"interrupted while writing the joined report in {out}; rerun the command", 130)
    except (ValueError, OSError) as err:
        _fail(str(err))
    typer.echo(f"report: {report}")


@reproduce.command("softmax-not-enough")
def reproduce_softmax_not_enough(
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results/softmax_not_enough"),
    seeds: Annotated[int | None, typer.Option(help="Seeds (default 10; 2 with --quick).")] = None,
    normalizers: Annotated[
        str | None,
        typer.Option(
            help="Cross-normaliser table, trained from scratch: registry names with softmax, "
            "e.g. softmax,adaptive,ssmax, or all (every registry normaliser)."
        ),
    ] = None,
    device: Device = None,
    quick: Quick = False,
    fresh: Fresh = False,
    yes: Yes = False,
    temperature_fit: Annotated[
        bool | None, typer.Option(help="Refit the adaptive-temperature polynomial (App. F).")
    ] = None,
    model_variant: Annotated[
        str | None,
        typer.Option(help="listing (the paper's Flax listing, default) or ours (earlier model)."),
    ] = None,
    schedule: Annotated[
        str | None, typer.Option(help="Learning rate: cosine (default, decays to 0) or constant.")
    ] = None,
    regularizer: Annotated[
        str | None,
        typer.Option(help="coupled (Adam + L2 in the loss, default) or decoupled (AdamW)."),
    ] = None,
    ablation: Annotated[
        bool | None,
        typer.Option(
            help="Also train schedule × regulariser × variant (8 × seeds models) and the "
            "default combination at 5,000, 10,000 and 20,000 steps (600, 1,200, 2,400 with "
            "--quick; --steps adds its own length)."
        ),
    ] = None,
    steps: Annotated[
        int | None,
        typer.Option(help="Training steps per model (default 20,000; 600 with --quick)."),
    ] = None,
) -> None:
    """Veličković et al. (2025): max retrieval, adaptive temperature, dispersion, claims report."""
    options = {
        "seeds": seeds,
        "normalizers": _names(normalizers, "normalizers"),
        "device": device,
        "temperature_fit": temperature_fit,
        "model_variant": model_variant,
        "schedule": schedule,
        "regularizer": regularizer,
        "ablation": ablation,
        "steps": steps,
    }
    _run("softmax-not-enough", options, quick=quick, out=out, fresh=fresh, yes=yes)


@demo.command("long-context")
def demo_long_context(
    model: Model = None,
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results/long_context"),
    device: Device = None,
    dtype: Dtype = None,
    quick: Quick = False,
    fresh: Fresh = False,
    yes: Yes = False,
    prompts: Annotated[int | None, typer.Option(help="Prompts per list length.")] = None,
    allow_incomplete_weights: AllowIncomplete = None,
) -> None:
    """Max-finding prompts of growing length: softmax vs adaptive temperature (inference only)."""
    options = {
        "model": model,
        "device": device,
        "dtype": dtype,
        "prompts": prompts,
        "allow_incomplete_weights": allow_incomplete_weights,
    }
    _run("long-context", options, quick=quick, out=out, fresh=fresh, yes=yes)


@app.command("scan")
def scan(
    model: Annotated[
        str,
        typer.Argument(
            metavar="MODEL",
            help="Named model (smollm2-135m, minilm-l6, gpt2), hub id, local folder or GGUF file.",
        ),
    ],
    text: Text = None,
    lengths: Annotated[
        str | None, typer.Option(help="Lengths L, e.g. 256,1024,4096 (default 256 … 4096).")
    ] = None,
    windows: Annotated[
        int | None, typer.Option(help="Token windows spread over the text (default 4).")
    ] = None,
    rows: Annotated[
        int | None, typer.Option(help="Sampled rows per window and length for Alg. 3-5 (16).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Results folder (default results/scan/<model>).")
    ] = None,
    device: Device = None,
    dtype: Dtype = None,
    quick: Quick = False,
    fresh: Fresh = False,
    yes: Yes = False,
    beyond_context: Beyond = None,
    allow_incomplete_weights: AllowIncomplete = None,
) -> None:
    """Every layer × head × length of MODEL: entropy, max weight, sink mass, spread, β, critical
    N, N_s/N, ‖J‖₂, dispersion; a kind per head and the papers' flags, in report.md."""
    from attnlimits.experiments.limitations.side_by_side import model_folder

    options = {
        "model": model,
        "text": _path(text, "text"),
        "lengths": _numbers(lengths, int, "lengths"),
        "windows": windows,
        "rows": rows,
        "device": device,
        "dtype": dtype,
        "beyond_context": beyond_context,
        "allow_incomplete_weights": allow_incomplete_weights,
    }
    folder = out or Path("results/scan") / model_folder(model)
    _run("scan", options, quick=quick, out=folder, fresh=fresh, flags={"model": "MODEL"}, yes=yes)


@app.command("compare")
def compare(
    model: Annotated[str | None, typer.Option(help="A causal LM, as for scan.")] = None,
    normalizers: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated specs, name or name:param=value;param=value, e.g. "
            "adaptive,logn:train_length=2048,topk:k=64 (softmax, the baseline, always runs)."
        ),
    ] = None,
    lengths: Annotated[
        str | None, typer.Option(help="Lengths L, e.g. 512,2048,8192 (default 512 … 8192).")
    ] = None,
    sequences: Annotated[int | None, typer.Option(help="Book stretches (default 3).")] = None,
    probes_per_length: Annotated[
        int | None, typer.Option(help="Retrieval probes per length and sequence (default 4).")
    ] = None,
    train_length: Annotated[
        int | None,
        typer.Option(help="train_length of logn / ssmax_trained (default: the model's context)."),
    ] = None,
    text: Text = None,
    out: Annotated[
        Path | None, typer.Option(help="Results folder (default results/compare/<model>).")
    ] = None,
    device: Device = None,
    dtype: Dtype = None,
    quick: Quick = False,
    fresh: Fresh = False,
    yes: Yes = False,
    beyond_context: Beyond = None,
    allow_incomplete_weights: AllowIncomplete = None,
) -> None:
    """Swap normalisers into a causal LM at inference: perplexity, a retrieval probe and head
    entropy per length, with their cost, in report.md."""
    from attnlimits.experiments.limitations.side_by_side import model_folder

    options = {
        "model": model,
        "normalizers": _specs(normalizers, "normalizers"),
        "lengths": _numbers(lengths, int, "lengths"),
        "sequences": sequences,
        "probes_per_length": probes_per_length,
        "train_length": train_length,
        "text": _path(text, "text"),
        "device": device,
        "dtype": dtype,
        "beyond_context": beyond_context,
        "allow_incomplete_weights": allow_incomplete_weights,
    }
    folder = out or Path("results/compare") / model_folder(model or "smollm2-135m")
    _run("compare", options, quick=quick, out=folder, fresh=fresh, yes=yes)


app.command("report")(report_command)  # cli/report.py
app.command("sweep")(sweep_command)  # its options: cli/sweep.py
app.command("view")(view_command)  # its options: cli/view.py
reproduce.command("clrs-text")(clrs_text_command(_run))  # its options: cli/clrs_text.py
main = app  # the console entry point; python -m attnlimits.cli runs cli/__main__.py
