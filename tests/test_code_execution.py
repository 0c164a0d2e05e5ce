"""No input runs code (issue 58): a model folder's own Python (``auto_map``) and a results
folder's checkpoint are data, never programs.

A folder whose config or tokenizer config names its own classes makes transformers ask "Do you
wish to run the custom code? [y/N]" on stdin; a "y" there ran the folder's code. A checkpoint
replaced by a pickle with a ``__reduce__`` payload ran it on every rerun. Each test below plants
a payload that would create a file, feeds "y" where a prompt could read it, and checks that the
file never appears and the refusal is one line.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnlimits.capture import ModelUnavailableError, load_model
from attnlimits.experiments.softmax_not_enough.config import ModelConfig, TrainConfig
from attnlimits.experiments.softmax_not_enough.train import (
    CheckpointError,
    checkpoint_path,
    train,
)
from tiny_models import tiny_model_dir

SRC = Path(__file__).resolve().parents[1] / "src" / "attnlimits"

#: Module code that leaves a mark when imported: the proof that a folder's code ran.
_PAYLOAD = """
import pathlib
pathlib.Path({mark!r}).write_text("ran")
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
class EvilConfig(LlamaConfig):
    model_type = {model_type!r}
class EvilModel(LlamaForCausalLM):
    config_class = EvilConfig
class EvilTokenizer(PreTrainedTokenizerFast):
    pass
"""


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = " ".join(f"word{i % 97} tok{i % 13}" for i in range(3000))
    return tiny_model_dir(tmp_path_factory.mktemp("remote"), "llama", text, max_positions=64)


def _custom_folder(base: Path, root: Path, where: str, model_type: str) -> tuple[Path, Path]:
    """A copy of ``base`` whose ``where`` ("config" or "tokenizer") names classes in its own
    ``evil.py``, and the file that module writes when imported."""
    folder, mark = root / f"{where}-{model_type}", root / f"ran-{where}-{model_type}"
    shutil.copytree(base, folder)
    (folder / "evil.py").write_text(_PAYLOAD.format(mark=str(mark), model_type=model_type))
    if where == "config":
        cfg = json.loads((folder / "config.json").read_text())
        cfg["model_type"] = model_type
        cfg["auto_map"] = {
            "AutoConfig": "evil.EvilConfig",
            "AutoModelForCausalLM": "evil.EvilModel",
        }
        (folder / "config.json").write_text(json.dumps(cfg))
    else:
        tok = json.loads((folder / "tokenizer_config.json").read_text())
        tok["tokenizer_class"] = "EvilTokenizer"
        tok["auto_map"] = {"AutoTokenizer": [None, "evil.EvilTokenizer"]}
        (folder / "tokenizer_config.json").write_text(json.dumps(tok))
    return folder, mark


@pytest.mark.parametrize("where", ["config", "tokenizer"])
def test_a_folder_that_needs_its_own_code_is_refused_even_with_yes_on_stdin(
    tiny_llama: Path, tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    folder, mark = _custom_folder(tiny_llama, tmp_path, where, "evilmodel")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n" * 10))  # what `yes |` would answer
    with pytest.raises(ModelUnavailableError, match="never runs a model's code") as err:
        load_model(str(folder))
    assert "\n" not in str(err.value)
    assert not mark.exists(), "the folder's code ran"


def test_a_native_class_loads_without_running_the_folders_code(
    tiny_llama: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An auto_map beside a model type transformers implements: transformers' own class loads,
    and the folder's module is never imported."""
    import io

    folder, mark = _custom_folder(tiny_llama, tmp_path, "config", "llama")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n" * 10))
    loaded = load_model(str(folder))
    assert type(loaded.model).__name__ == "LlamaForCausalLM"
    assert not mark.exists(), "the folder's code ran"


def test_scan_with_yes_piped_refuses_in_one_line(tiny_llama: Path, tmp_path: Path) -> None:
    """The reported case, end to end: ``yes | attnlimits scan FOLDER``."""
    folder, mark = _custom_folder(tiny_llama, tmp_path, "config", "evilmodel")
    env = {k: v for k, v in os.environ.items() if k != "TRANSFORMERS_TRUST_REMOTE_CODE"}
    out = str(tmp_path / "out")
    run = subprocess.run(
        [sys.executable, "-m", "attnlimits.cli", "scan", str(folder), "--quick", "--out", out],
        input="y\n" * 50,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), run.stderr
    assert "never runs a model's code" in lines[0]
    assert not mark.exists(), "the folder's code ran"


# ---- checkpoints ---------------------------------------------------------------------------


class _Payload:
    """Unpickles by calling ``Path.write_text`` on a mark: code run by loading."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (self.mark.write_text, ("ran",))


def _checkpoint(tmp_path: Path) -> tuple[ModelConfig, TrainConfig, Path]:
    mcfg, tcfg = ModelConfig(width=8), TrainConfig(steps=6, batch=4, ckpt_every=2, log_every=2)
    return mcfg, tcfg, checkpoint_path(tmp_path, mcfg, tcfg, seeds=(0,))


@pytest.mark.parametrize("kind", ["reduce payload", "payload inside the state"])
def test_a_checkpoint_that_would_run_code_is_refused(tmp_path: Path, kind: str) -> None:
    mcfg, tcfg, ckpt = _checkpoint(tmp_path)
    mark = tmp_path / "ran"
    train(mcfg, tcfg, seeds=(0,), ckpt=ckpt, stop_after=2)  # a real, interrupted run
    if kind == "reduce payload":
        torch.save(_Payload(mark), ckpt)
    else:  # a genuine state with one entry replaced
        state = torch.load(ckpt, weights_only=True)
        state["log"] = [_Payload(mark)]
        torch.save(state, ckpt)
    with pytest.raises(CheckpointError, match="more than plain training state") as err:
        train(mcfg, tcfg, seeds=(0,), ckpt=ckpt)
    assert "\n" not in str(err.value) and "weights_only" not in str(err.value)
    assert not mark.exists(), "the checkpoint's code ran"


@pytest.mark.parametrize("content", [b"not a checkpoint at all", b"PK\x03\x04broken zip"])
def test_an_unreadable_checkpoint_is_refused_in_one_line(tmp_path: Path, content: bytes) -> None:
    mcfg, tcfg, ckpt = _checkpoint(tmp_path)
    ckpt.write_bytes(content)
    with pytest.raises(CheckpointError, match=r"cannot be read|plain training state") as err:
        train(mcfg, tcfg, seeds=(0,), ckpt=ckpt)
    assert "\n" not in str(err.value)


def test_a_genuine_checkpoint_still_resumes(tmp_path: Path) -> None:
    """The guard must not refuse what attnlimits itself writes."""
    mcfg, tcfg, ckpt = _checkpoint(tmp_path)
    train(mcfg, tcfg, seeds=(0,), ckpt=ckpt, stop_after=4)
    resumed, _ = train(mcfg, tcfg, seeds=(0,), ckpt=ckpt)
    whole, _ = train(mcfg, tcfg, seeds=(0,))
    for a, b in zip(resumed.parameters(), whole.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


# ---- the package, read as text -------------------------------------------------------------

#: Calls that would run code or unpickle data from disk; none may appear in the package.
_NEVER = {"pickle.load", "pickle.loads", "dill.load", "joblib.load", "eval", "exec"}


def _calls(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                found.append((f.id, node))
            elif isinstance(f, ast.Attribute):
                base = f.value.id if isinstance(f.value, ast.Name) else "?"
                found.append((f"{base}.{f.attr}", node))
    return found


def _keyword(call: ast.Call, name: str) -> object:
    for kw in call.keywords:
        if kw.arg == name and isinstance(kw.value, ast.Constant):
            return kw.value.value
    return "absent"


def test_no_path_of_the_package_unpickles_or_runs_code_from_disk() -> None:
    """Every ``torch.load`` passes ``weights_only=True``; no pickle/eval/exec at all; every
    ``from_pretrained`` is in a file that says ``trust_remote_code`` False, and the files that
    load models are exactly the reviewed ones, so a new loader is read before it lands."""
    loaders: set[str] = set()
    for path in sorted(SRC.rglob("*.py")):
        source = path.read_text()
        rel = path.relative_to(SRC).as_posix()
        for name, call in _calls(ast.parse(source)):
            where = f"{rel}:{call.lineno}"
            assert name not in _NEVER, f"{where} calls {name}"
            if name == "torch.load":
                assert _keyword(call, "weights_only") is True, f"{where}: weights_only=True"
            if name.endswith(".from_pretrained") or (
                name == "partial"
                and any(
                    isinstance(a, ast.Attribute) and a.attr == "from_pretrained" for a in call.args
                )
            ):
                loaders.add(rel)
        if rel in loaders:
            said = re.findall(r"trust_remote_code\W{0,4}[:=]\s*(\w+)", source)
            assert said and set(said) == {"False"}, f"{rel}: trust_remote_code {said}"
    assert loaders == {"capture/models.py", "capture/_sources.py"}, loaders
