"""Import layering: `import minijax` stays light and the frontend never imports backends."""

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True).stdout


def test_import_minijax_does_not_import_llvmlite_cuda_or_mpi4py():
    out = _run("import sys, minijax, minijax.numpy, minijax.experimental.multihost_utils; "
               "print(sorted(m for m in sys.modules if m.split('.')[0] in "
               "('llvmlite', 'cuda', 'cupy', 'mpi4py')))")
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


#: The frontend's layers, lowest first: a module may import (at module level or inside a
#: function) only modules of its own or a lower layer. compiler/ and backends/ sit beside
#: the leaves (the frontend uses them; they never import the frontend, tested above).
FRONTEND_LAYERS = [
    ("leaves", ["config", "version", "dtypes", "errors", "source_info", "jaxpr_printer",
                "tree_util", "tree", "api_util",
                "trace_events", "display", "traceback_util", "distributed",
                "compiler", "backends"]),
    ("core", ["core"]),
    ("arrays", ["array", "array_types", "placement", "sharding"]),
    ("dispatch", ["dispatch", "eager_compiled", "float_checks"]),
    ("interpreters", ["interpreters"]),
    ("lax", ["lax"]),
    ("derivatives", ["custom_derivatives", "ad_checkpoint"]),
    ("libraries", ["numpy", "random", "nn", "scipy", "debug",
                   "debugger", "callback", "typing", "flatten_util", "ops", "image",
                   "ref"]),
    ("api", ["api", "api_config", "api_jit", "api_jacobians", "api_spmd", "api_pmap",
             "api_shard_map", "api_sharded_jit", "devices", "global_arrays", "aot", "profiler",
             "stages", "extend"]),
    ("top", ["example_libraries", "experimental", "test_util", "tools", "compat", "__init__"]),
]


def _layer_of(module: str):
    parts = module.split(".")
    if parts[0] != "minijax":
        return None
    name = parts[1] if len(parts) > 1 else "__init__"
    for rank, (_, names) in enumerate(FRONTEND_LAYERS):
        if name in names:
            return rank
    return None


def _imports(path):
    import ast
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "minijax":
                for alias in node.names:
                    yield node.lineno, f"minijax.{alias.name}"
            else:
                yield node.lineno, node.module


def test_frontend_imports_follow_the_layers():
    """core -> arrays -> dispatch -> interpreters -> lax -> numpy/random/nn -> api: no
    module imports a higher layer, not even inside a function (that is how the old import
    cycle was held together)."""
    import pathlib

    import minijax
    root = pathlib.Path(minijax.__file__).parent
    every = {name for _, names in FRONTEND_LAYERS for name in names}
    offenders, unlisted = [], []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        top = rel.parts[0].removesuffix(".py")
        if top not in every:
            unlisted.append(str(rel))
            continue
        if top in ("compiler", "backends"):
            continue  # checked by test_backends_and_compiler_never_import_the_frontend
        mine = _layer_of(f"minijax.{top}")
        for line, target in _imports(path):
            theirs = _layer_of(target)
            if theirs is not None and theirs > mine:
                offenders.append(f"{rel}:{line} ({FRONTEND_LAYERS[mine][0]}) imports "
                                 f"{target} ({FRONTEND_LAYERS[theirs][0]})")
    assert unlisted == [], "add these modules to FRONTEND_LAYERS"
    assert offenders == []


def test_codegen_targets_stay_apart():
    """codegen/gpu and the target-neutral codegen modules (codegen/*.py, kernel_plan.py
    included) never import codegen/cpu, not even inside a function; codegen/cpu never
    imports codegen/gpu. What both targets share lives in the neutral modules."""
    import pathlib

    import minijax
    codegen = pathlib.Path(minijax.__file__).parent / "compiler" / "codegen"
    cpu, gpu = "minijax.compiler.codegen.cpu", "minijax.compiler.codegen.gpu"
    rules = [(sorted(codegen.glob("*.py")), cpu), (sorted((codegen / "gpu").rglob("*.py")), cpu),
             (sorted((codegen / "cpu").rglob("*.py")), gpu)]
    assert all(paths for paths, _ in rules)
    offenders = []
    for paths, banned in rules:
        for path in paths:
            for line, target in _imports(path):
                if target == banned or target.startswith(banned + "."):
                    offenders.append(f"{path.relative_to(codegen)}:{line} imports {target}")
    assert offenders == []


def test_imports_sees_imports_inside_functions(tmp_path):
    """The static checks above also catch the function-level imports that hide a cycle."""
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from minijax.compiler.codegen.cpu.loops import x\n"
                   "    import minijax.compiler.codegen.gpu\n")
    assert list(_imports(src)) == [(2, "minijax.compiler.codegen.cpu.loops"),
                                   (3, "minijax.compiler.codegen.gpu")]


#: The function-level imports of minijax modules that stay, each with why: lazy loading that
#: keeps `import minijax` (or a jit call served from the caches) light, and modules that
#: need an optional heavy dependency (llvmlite, cuda-python). Keys: (file under minijax/,
#: imported module or a package prefix of it). An import inside a function to dodge an
#: import cycle is not a reason: layer the modules instead (see FRONTEND_LAYERS).
FUNCTION_LEVEL_IMPORTS = {
    ("compiler/evaluator/__init__.py", "minijax.compiler.evaluator.api"):
        "the interpreter loads on first use; lax imports only the NumPy semantics modules",
    ("debug.py", "minijax.compiler.evaluator"): "the interpreter loads on the first callback",
    ("api_jit.py", "minijax.compiler.analysis"): "analysis loads buffer assignment, a pass",
    ("api_spmd.py", "minijax.compiler.passes"): "`import minijax` loads no compiler pass",
    ("api_sharded_jit.py", "minijax.compiler.passes"): "`import minijax` loads no compiler pass",
    ("backends/base.py", "minijax.compiler.pipeline"): "a cache hit never loads the pipeline",
    ("compiler/driver.py", "minijax.compiler.pipeline"): "a cache hit never loads the pipeline",
    ("compiler/driver.py", "minijax.compiler.passes.buffer_assignment"):
        "a disk-cache hit loads this one pass, not the pipeline",
    ("compiler/driver.py", "minijax.compiler.dumps"): "only when MINIJAX_FLAGS asks for dumps",
    ("compiler/pipeline.py", "minijax.compiler.passes"):
        "importing CompileOptions (a cache hit) loads no pass",
    ("aot.py", "minijax.compiler.codegen.cpu"): "llvmlite, only when something is exported",
    ("backends/cpu/blas.py", "minijax.backends.cpu"):
        "llvmlite, only when a gemm driver is built (finding BLAS needs none)",
    ("backends/cpu/blas.py", "minijax.compiler.codegen.llvm_types"):
        "llvmlite, only when a gemm driver is built (finding BLAS needs none)",
    ("backends/cuda/__init__.py", "minijax.backends.cuda"):
        "cuda-python and llvmlite load only when a GPU is used",
    ("backends/cuda/program.py", "minijax.compiler.codegen.gpu.ptx"):
        "llvmlite.binding and ptxas only when PTX text is asked for",
}


def _function_level_imports(path, root):
    """(line, imported minijax module) for each import inside a function body of `path`."""
    import ast
    import pathlib

    package = ".".join(("minijax",) + path.relative_to(root).with_suffix("").parts)
    if path.name == "__init__.py":
        package = package.removesuffix(".__init__")
    else:
        package = package.rsplit(".", 1)[0]

    def resolve(module, name):
        """`module.name` when that is a module of the tree, else `module`."""
        full = f"{module}.{name}"
        rel = pathlib.Path(*full.split(".")[1:])
        return full if ((root / rel).with_suffix(".py").exists()
                        or (root / rel / "__init__.py").exists()) else module

    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            if in_function and isinstance(child, ast.Import):
                found.extend((child.lineno, a.name) for a in child.names
                             if a.name.split(".")[0] == "minijax")
            elif in_function and isinstance(child, ast.ImportFrom):
                module = child.module or ""
                if child.level:
                    base = package.rsplit(".", child.level - 1)[0] if child.level > 1 else package
                    module = f"{base}.{module}" if module else base
                if module.split(".")[0] == "minijax":
                    found.extend((child.lineno, resolve(module, a.name)) for a in child.names)
            visit(child, inner)

    visit(ast.parse(path.read_text()), False)
    return found


def test_no_function_level_imports_of_minijax_modules():
    """Imports flow one way, so no module imports another inside a function to dodge a
    cycle; the few lazy loads left are listed, with why, in FUNCTION_LEVEL_IMPORTS."""
    import pathlib

    import minijax
    root = pathlib.Path(minijax.__file__).parent
    offenders, used = [], set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for line, target in _function_level_imports(path, root):
            key = next((k for k in FUNCTION_LEVEL_IMPORTS if k[0] == rel and (
                target == k[1] or target.startswith(k[1] + "."))), None)
            if key is None:
                offenders.append(f"{rel}:{line} imports {target} inside a function")
            else:
                used.add(key)
    assert offenders == [], "layer the modules instead, or list a lazy load with its reason"
    assert sorted(set(FUNCTION_LEVEL_IMPORTS) - used) == [], "stale FUNCTION_LEVEL_IMPORTS"


def test_function_level_import_check_sees_every_form(tmp_path):
    """The check catches absolute, `from minijax import x`, relative and nested forms."""
    import pathlib
    pkg = tmp_path / "minijax"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "other.py").write_text("")
    src = pkg / "sub" / "m.py"
    src.write_text("import minijax.sub\n\ndef f():\n    import minijax.sub.other\n"
                   "    from minijax import sub\n    from . import other\n"
                   "    from .. import sub as s\n\n"
                   "class C:\n    def g(self):\n        def h():\n"
                   "            from minijax.sub.other import x\n")
    assert _function_level_imports(pathlib.Path(src), pkg) == [
        (4, "minijax.sub.other"), (5, "minijax.sub"), (6, "minijax.sub.other"),
        (7, "minijax.sub"), (12, "minijax.sub.other")]


def _import_targets(path, root):
    """(line, imported minijax module, at module level) for each import in `path` (a file
    under `root`, the minijax package folder). `from pkg import name` imports the module
    pkg.name when there is one, else pkg; imports under `if TYPE_CHECKING:` are skipped."""
    import ast
    import pathlib

    parts = path.relative_to(root.parent).with_suffix("").parts
    me = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]

    def is_module(dotted):
        rel = pathlib.Path(*dotted.split(".")[1:])
        return (root / rel).with_suffix(".py").exists() or (root / rel / "__init__.py").exists()

    found = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.dump(child.test):
                continue
            if isinstance(child, ast.Import):
                found.extend((child.lineno, a.name, top) for a in child.names
                             if a.name.split(".")[0] == "minijax")
            elif isinstance(child, ast.ImportFrom):
                module = child.module or ""
                if child.level:
                    base = package
                    for _ in range(child.level - 1):
                        base = base.rpartition(".")[0]
                    module = f"{base}.{module}" if module else base
                if module.split(".")[0] == "minijax":
                    found.extend((child.lineno, f"{module}.{a.name}" if is_module(
                        f"{module}.{a.name}") else module, top) for a in child.names)
            visit(child, top and not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))

    visit(ast.parse(path.read_text()), True)
    return me, found


def _import_cycles(root):
    """The cycles (strongly connected groups of two or more modules) of the module-level
    import graph of the package folder `root`."""
    import sys

    graph = {}
    for path in sorted(root.rglob("*.py")):
        me, found = _import_targets(path, root)
        graph[me] = {target for _, target, top in found if top and target != me}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                cycles.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return cycles


def test_module_level_imports_have_no_cycles():
    """Imports flow one way across the whole package, packages' __init__ modules included
    (a package that imports its submodules is never imported back by them)."""
    import pathlib

    import minijax
    assert _import_cycles(pathlib.Path(minijax.__file__).parent) == []


def test_import_cycle_check_sees_a_package_imported_back(tmp_path):
    """The check above sees the old minijax.numpy cycle: the package imports a submodule
    that imports the package back; `from pkg import submodule` alone is no cycle."""
    pkg = tmp_path / "minijax" / "numpy"
    pkg.mkdir(parents=True)
    (tmp_path / "minijax" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from minijax.numpy.util import f\n"
                                     "from minijax.numpy import extras\n")
    (pkg / "util.py").write_text("def f():\n    from minijax.numpy import extras\n")
    (pkg / "extras.py").write_text("from minijax.numpy import util\nimport minijax.numpy as jnp\n")
    assert _import_cycles(tmp_path / "minijax") == [["minijax.numpy", "minijax.numpy.extras"]]
    (pkg / "extras.py").write_text("from minijax.numpy import util\n")
    assert _import_cycles(tmp_path / "minijax") == []


def test_numpy_submodules_never_import_the_numpy_package():
    """minijax/numpy/__init__.py imports its submodules, so none of them imports the package
    back, not even inside a function: they import the concrete modules they need, or base.py
    (the core of the namespace) as `jnp`."""
    import pathlib

    import minijax
    root = pathlib.Path(minijax.__file__).parent
    offenders = []
    for path in sorted((root / "numpy").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        for line, target, _ in _import_targets(path, root)[1]:
            if target == "minijax.numpy":
                offenders.append(f"{path.relative_to(root)}:{line}")
    assert offenders == []
