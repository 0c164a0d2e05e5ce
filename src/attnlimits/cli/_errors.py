"""How every command ends on bad input: one line on stderr, ``error: ...``, and an exit code;
and how it shows a warning: one line, ``warning: ...``.

Parse errors (an unknown option, ``--windows abc``, a missing MODEL) are caught once for the
whole app by :class:`OneLineGroup`, the root command's class: they print one ``error:`` line,
then at most one ``usage:`` line, and exit 2, instead of typer's framed panel.

``--traceback`` (an option of the root command) or ``ATTNLIMITS_TRACEBACK=1`` in the
environment puts the full traceback of the failure above the ``error:`` line: for reporting a
bug, or for finding where a one-line error came from.
"""

from __future__ import annotations

import difflib
import os
import signal
import sys
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

__all__ = [
    "TRACEBACK_ENV",
    "OneLineApp",
    "OneLineGroup",
    "fail",
    "no_empty_folders_left",
    "one_line_warnings",
    "parse_error",
    "root_options",
    "show_tracebacks",
]

#: The environment variable that, set to 1, shows a failure's traceback as ``--traceback`` does.
TRACEBACK_ENV = "ATTNLIMITS_TRACEBACK"
_TRACEBACK = {"asked": False}  # --traceback of the command being run (set by the root command)

#: The parse-error classes of whichever click typer runs on (its own copy since typer 0.23).
_MRO = {cls.__name__: cls for cls in typer.BadParameter.__mro__}
_CLICK_ERROR: type[Exception] = _MRO["ClickException"]
_USAGE_ERROR: type[Exception] = _MRO["UsageError"]
#: What a value that failed typer's conversion should have been (pydantic's error types).
_EXPECTED = {
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "bool_parsing": "true or false",
}


def show_tracebacks(asked: bool) -> None:
    """Whether :func:`fail` shows the traceback of the exception being handled (``--traceback``;
    ``ATTNLIMITS_TRACEBACK=1`` shows it either way)."""
    _TRACEBACK["asked"] = bool(asked)


def root_options(
    traceback: Annotated[
        bool,
        typer.Option(
            "--traceback",
            help=f"On an error, print its full traceback above the one-line message (for a "
            f"bug report); {TRACEBACK_ENV}=1 in the environment does the same.",
        ),
    ] = False,
) -> None:
    """The root command's own options (``attnlimits --traceback COMMAND ...``), read before
    any command runs: the app's callback."""
    show_tracebacks(traceback)


def _tracebacks() -> bool:
    env = os.environ.get(TRACEBACK_ENV, "").strip().lower()
    return _TRACEBACK["asked"] or env not in ("", "0", "false", "no")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (2: bad input).

    Progress bars a failed step left open are closed first, so that the error is the last line
    (an open tqdm bar redraws itself when it is garbage-collected). Called while an exception
    is handled, with ``--traceback`` or ``ATTNLIMITS_TRACEBACK=1``, that exception's full
    traceback is printed first."""
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", ())):
        bar.close()
    if _tracebacks() and sys.exc_info()[1] is not None:
        typer.echo(traceback.format_exc().rstrip("\n"), err=True)
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=code)


@contextmanager
def one_line_warnings() -> Iterator[None]:
    """Inside the block, a warning prints as ``warning: message`` on stderr (not Python's
    ``file:line: Category: message`` and the source line); restored on exit."""

    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        typer.echo(f"warning: {message}", err=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


@contextmanager
def no_empty_folders_left(out: Path) -> Iterator[None]:
    """A command that ends in an error (or Ctrl-C) leaves none of the folders on the way to
    ``out`` that it created (``results/scan`` of a default ``--out``) if they are still empty;
    ``out`` itself is the runner's to clean. Folders with anything in them stay."""
    new = [p for p in (out, *out.parents) if not p.exists()]  # deepest first
    try:
        yield
    except BaseException:
        for folder in new:
            try:
                folder.rmdir()
            except FileNotFoundError:  # removed already (the runner removes ``out``)
                continue
            except OSError:  # not empty: saved parts, or another run's
                break
        raise


def _path(ctx: Any) -> str:
    """The command as the user typed it: ``attnlimits reproduce limitations``."""
    if ctx is None:
        return "attnlimits"
    return " ".join(["attnlimits", *ctx.command_path.split()[1:]])


def _name(param: Any) -> str:
    """An option by its long flag (``--windows``), an argument by its metavar (``MODEL``)."""
    opts = list(getattr(param, "opts", None) or [])
    if getattr(param, "param_type_name", "") == "argument":
        return str(getattr(param, "metavar", None) or param.name).upper()
    return next((o for o in opts if o.startswith("--")), opts[0] if opts else str(param.name))


def _bad_value(err: Any, name: str) -> str:
    """``--windows takes a whole number, got 'abc'`` from a failed conversion."""
    cause = err.__cause__
    errors = cause.errors() if hasattr(cause, "errors") else []
    if errors and errors[0].get("type") in _EXPECTED:
        return f"{name} takes {_EXPECTED[errors[0]['type']]}, got {errors[0].get('input')!r}"
    message = errors[0].get("msg", err.message) if errors else err.message
    return f"{name}: {_lower(message)}"


def _commands(ctx: Any) -> str:
    command = ctx.command
    return ", ".join(command.list_commands(ctx)) if hasattr(command, "list_commands") else ""


def parse_error(err: Any) -> str:
    """The one-line message for a parse error ``err`` (a click ``UsageError``)."""
    ctx, kind = getattr(err, "ctx", None), type(err).__name__
    path, message = _path(ctx), str(getattr(err, "message", err))
    param = getattr(err, "param", None)
    if kind == "NoArgsIsHelpError" and ctx is not None:
        return f"{path} needs a command: {_commands(ctx)}"
    if kind == "NoSuchOption":
        option = err.option_name
        close = difflib.get_close_matches(option, list(err.possibilities or []), 1, 0.8)
        mean = f"; did you mean {close[0]}?" if close else ""
        return f"{path} has no option {option}{mean}"
    if kind == "MissingParameter" and param is not None:
        what = _name(param)
        help_text = (getattr(param, "help", None) or "").rstrip(".")
        return f"{path} needs {what}" + (f": {_lower(help_text)}" if help_text else "")
    if kind == "BadOptionUsage" and message.endswith("requires an argument."):
        return f"{err.option_name} needs a value"
    if isinstance(err, typer.BadParameter) and param is not None:
        return _bad_value(err, _name(param))
    if message.startswith("No such command") and ctx is not None:
        typed = message.split("'")[1] if message.count("'") >= 2 else message
        return f"{path} has no command {typed!r}; its commands: {_commands(ctx)}"
    if message.startswith("Got unexpected extra argument"):
        extra = message.rpartition("(")[2].rstrip(")")
        return f"{path} got an unexpected argument {extra!r} (a value needs its --option)"
    return _lower(err.format_message() if hasattr(err, "format_message") else message)


def _lower(text: str) -> str:
    """A sentence as a clause: lower-case first letter (not an acronym's), no full stop."""
    if text[1:2].islower():
        text = text[:1].lower() + text[1:]
    return text.rstrip(".")


def _usage(err: Any) -> str | None:
    ctx = getattr(err, "ctx", None)
    if ctx is None:
        return None
    usage = ctx.get_usage().strip().replace("Usage:", "usage:", 1)
    words = usage.split()
    if len(words) > 1:  # the program as the user knows it, not "root" or "python -m ..."
        usage = " ".join(["usage:", _path(ctx), *words[1 + len(ctx.command_path.split()) :]])
    return f"{usage}  ({_path(ctx)} --help for more)"


#: What Ctrl-C outside a run's own handler prints (typer turns it into a silent exit 130).
INTERRUPTED = "interrupted (Ctrl-C) before the command finished; rerun it to start again"


class OneLineGroup(TyperGroup):
    """The root command: parse errors end in one ``error:`` line (and a ``usage:`` line),
    exit 2. Typer's own handler would draw a framed panel of five or more lines. Ctrl-C
    anywhere in a command that does not handle it (before a run starts, in ``report``) ends in
    one ``error: interrupted ...`` line and exit 130."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            fail(INTERRUPTED, 130)

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except KeyboardInterrupt:  # between the parse and the command, or after it
            if not standalone_mode:
                raise
            typer.echo(f"error: {INTERRUPTED}", err=True)
            sys.exit(130)
        except _CLICK_ERROR as err:
            if not standalone_mode:
                raise
            help_text = str(getattr(err, "message", "")).strip()
            if type(err).__name__ == "NoArgsIsHelpError" and help_text:
                typer.echo(help_text)  # the help (typer's rich help printed it already)
            if isinstance(err, _USAGE_ERROR):
                typer.echo(f"error: {parse_error(err)}", err=True)
                if (usage := _usage(err)) is not None:
                    typer.echo(usage, err=True)
            else:
                typer.echo(f"error: {err}", err=True)
            sys.exit(getattr(err, "exit_code", 2))
        except typer.Abort:  # a prompt answered with Ctrl-C or end of input
            if not standalone_mode:
                raise
            typer.echo("error: aborted", err=True)
            sys.exit(130)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


class OneLineApp(typer.Typer):
    """The ``attnlimits`` program (the console script calls it; tests call its command).

    Once the command is over, Ctrl-C is ignored: the process only exits, and an interrupt in
    its last moments printed a traceback from a library's exit hook (``torch._dynamo``'s) or
    killed it by the signal, after the command had printed its result."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
