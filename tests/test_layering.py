"""Import layering: `import minijax` stays light and the frontend never imports backends."""

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True).stdout


def test_import_minijax_does_not_import_llvmlite_or_cuda():
    out = _run("import sys, minijax, minijax.numpy; "
               "print(sorted(m for m in sys.modules if m.split('.')[0] in "
               "('llvmlite', 'cuda', 'cupy')))")
    assert out.strip() == "[]"


def test_core_and_numpy_do_not_import_backends_or_passes():
    out = _run("import sys, minijax; "
               "print(sorted(m for m in sys.modules if m.startswith(('minijax.backends.cpu', "
               "'minijax.backends.cuda', 'minijax.compiler.codegen', "
               "'minijax.compiler.passes'))))")
    assert out.strip() == "[]"


def test_backends_and_compiler_never_import_the_frontend():
    """Static check: backends/ and compiler/ (except lower.py) import no frontend module."""
    import ast
    import pathlib

    import minijax
    root = pathlib.Path(minijax.__file__).parent
    frontend = ("minijax.core", "minijax.lax", "minijax.numpy", "minijax.api",
                "minijax.interpreters", "minijax.array", "minijax.random", "minijax.nn")
    allowed = {"lower.py", "lowering_registry.py"}
    offenders = []
    for path in list((root / "backends").rglob("*.py")) + list((root / "compiler").rglob("*.py")):
        if path.name in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name.startswith(frontend) or name in ("minijax.array",):
                    offenders.append(f"{path.relative_to(root)} imports {name}")
    assert offenders == []
