"""Rich display: HTML for Lowered / Compiled / jaxprs is well formed, the fused graph's
Graphviz text names fusions with their source lines, and SVG parses when dot exists."""

import html.parser
import shutil
import xml.etree.ElementTree as ET

import pytest

import minijax as jax
import minijax.numpy as jnp
from minijax import display

_VOID = {"br", "hr", "img", "meta", "input"}


class _Checker(html.parser.HTMLParser):
    """Fails on unbalanced tags; collects the text."""

    def __init__(self):
        super().__init__()
        self.stack, self.text = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _parse(markup: str) -> str:
    checker = _Checker()
    checker.feed(markup)
    checker.close()
    assert checker.stack == []
    return "".join(checker.text)


def _mlp(x, w1, w2):
    h = jnp.tanh(x @ w1 + 1.0)
    return jax.nn.softmax(h @ w2, axis=-1)


def _elementwise(x, y):
    z = jnp.exp(x) * y + 2.0
    return jnp.sum(z * z), jnp.where(x > 0, z, -z)


def _scan(c, xs):
    return jax.lax.scan(lambda c, x: (c * 0.5 + x, c), c, xs)


MODULES = [
    (_mlp, (jnp.ones((4, 3)), jnp.ones((3, 5)), jnp.ones((5, 2)))),
    (_elementwise, (jnp.ones(7), jnp.ones(7))),
    (_scan, (jnp.zeros(3), jnp.ones((4, 3)))),
]


@pytest.mark.parametrize("fn,args", MODULES, ids=[m[0].__name__ for m in MODULES])
def test_lowered_compiled_and_jaxpr_html_are_well_formed(fn, args):
    lowered = jax.jit(fn).lower(*args)
    text = _parse(lowered._repr_html_())
    assert lowered.as_text().splitlines()[0] in text  # the HLO text survives escaping
    compiled = lowered.compile()
    text = _parse(compiled._repr_html_())
    assert "ENTRY" in text and "kernels" in text
    jaxpr = jax.make_jaxpr(fn)(*args)
    assert _parse(jaxpr._repr_html_()).strip() == str(jaxpr).strip()
    _parse(display.graph_html(compiled._entry.module))


def test_fused_graph_names_fusions_with_source_lines():
    args = MODULES[0][1]
    module = jax.jit(_mlp).lower(*args).compile()._entry.module
    dot = display.module_dot(module)
    assert dot.count("{") == dot.count("}")
    clusters = [line for line in dot.splitlines() if "subgraph" in line]
    fusions = [i for i in module.entry.instructions if i.opcode == "fusion"]
    assert len(clusters) == len(fusions) >= 1
    softmax_line = _mlp.__code__.co_firstlineno + 2
    assert f"test_display.py:{softmax_line}" in dot
    html_graph = _parse(display.graph_html(module))
    assert f"test_display.py:{softmax_line}" in html_graph
    # every edge joins declared nodes
    nodes = {line.split("[")[0].strip() for line in dot.splitlines()
             if "[label=" in line or line.strip().startswith('"output"')}
    for line in dot.splitlines():
        if "->" in line:
            a, b = (s.strip(" ;") for s in line.split("->"))
            assert a in nodes and b in nodes, line


def test_highlighting_escapes_markup():
    out = display.hlo_html('x = f32[2]{0} custom-call(), custom_call_target="<b>&"')
    assert "<b>&" not in out and "&lt;b&gt;&amp;" in out
    assert _parse(out).endswith('"<b>&"')


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_from_dot_parses():
    module = jax.jit(_mlp).lower(*MODULES[0][1]).compile()._entry.module
    svg = display.dot_to_svg(display.module_dot(module))
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")


def test_without_dot_the_html_graph_is_used(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    compiled = jax.jit(_elementwise).lower(*MODULES[1][1]).compile()
    assert "<table" in compiled._repr_html_() and "<svg" not in compiled._repr_html_()


@pytest.mark.parametrize("make,want", [
    # JAX 0.10.2's reprs of the same arrays
    (lambda: jnp.arange(3.0), "Array([0., 1., 2.], dtype=float32)"),
    (lambda: jnp.arange(3), "Array([0, 1, 2], dtype=int32)"),
    (lambda: jnp.asarray(2.0), "Array(2., dtype=float32, weak_type=True)"),
    (lambda: jnp.array([True, False]), "Array([ True, False], dtype=bool)"),
    (lambda: jnp.zeros((0, 3)), "Array([], shape=(0, 3), dtype=float32)"),
    (lambda: jnp.arange(2000.0), "Array([0.000e+00, 1.000e+00, 2.000e+00, ..., 1.997e+03, "
                                 "1.998e+03,\n       1.999e+03], dtype=float32)"),
    (lambda: jnp.arange(17), "Array([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, "
                             "14, 15, 16],      dtype=int32)"),
    (lambda: jnp.zeros(0), "Array([], shape=(0,), dtype=float32)"),
    (lambda: jnp.ones((2, 2), jnp.int32), "Array([[1, 1],\n       [1, 1]], dtype=int32)"),
])
def test_array_repr_matches_jax(make, want):
    assert repr(make()) == want
