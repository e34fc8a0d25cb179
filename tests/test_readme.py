"""README's Python blocks run as pasted (in order, sharing one namespace)."""

import pathlib
import re

from minijax import compat

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_readme_python_blocks_run(capsys, tmp_path, monkeypatch):
    blocks = _python_blocks()
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    hook_was_on = compat.is_installed()
    try:
        for k, block in enumerate(blocks):
            block = block.replace("/tmp/minijax-trace", str(tmp_path / "trace"))
            namespace: dict = {"__name__": f"readme_block_{k}"}
            exec(compile(block, f"README.md block {k}", "exec"), namespace)
            if k == 0:
                assert namespace["per_example"].shape == (4, 3, 2)
    finally:
        # A block installs the `import jax` hook: leave later tests of this process (and a
        # real JAX imported before) as they were.
        if not hook_was_on:
            compat.uninstall()
    out = capsys.readouterr().out
    assert "{ lambda" in out and "ENTRY" in out and "fusion" in out
    assert "x = [1. 2. 3.]" in out
    assert "invalid value (nan) encountered in log" in out
    assert list((tmp_path / "trace" / "plugins" / "profile").glob("*/*.trace.json"))
