"""minijax.aot.export: objects linked into a C driver match minijax; AArch64 objects."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import minijax
import minijax.aot
import minijax.lax as lax

CC = shutil.which("cc") or shutil.which("gcc")
ARM_CC = shutil.which("aarch64-linux-gnu-gcc")
QEMU = shutil.which("qemu-aarch64")
EM_X86_64, EM_AARCH64 = 62, 183


def _mlp(x, w, b):
    h = lax.tanh(lax.add(lax.dot(x, w), lax.broadcast_in_dim(b, (x.shape[0], w.shape[1]),
                                                             (1,))))
    return lax.reduce_sum(h, (1,)), lax.mul(h, 2.0), lax.reduce_max(h, (0,))


def _softmax_const(x):
    c = np.linspace(-1.0, 1.0, x.shape[1] * x.shape[0]).astype(np.float32).reshape(x.shape)
    e = lax.exp(lax.add(x, c))
    s = lax.reduce_sum(e, (1,))
    return (lax.div(e, lax.broadcast_in_dim(s, x.shape, (0,))),)


def _args_mlp():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in [(7, 13), (13, 9), (9,)]]


def _driver(res) -> str:
    """A C program: reads the inputs' bytes from argv[1], writes the outputs' to argv[2]."""
    n_in, n_out = len(res.input_shapes), len(res.output_shapes)
    sizes_in = [int(np.prod(d)) * np.dtype(t).itemsize for d, t in res.input_shapes]
    sizes_out = [int(np.prod(d)) * np.dtype(t).itemsize for d, t in res.output_shapes]
    return f"""
#include <stdio.h>
#include <stdlib.h>
#include "{os.path.basename(res.header_path)}"
int main(int argc, char **argv) {{
  static const size_t in_sizes[] = {{{', '.join(map(str, sizes_in))}}};
  static const size_t out_sizes[] = {{{', '.join(map(str, sizes_out))}}};
  void *ins[{max(n_in, 1)}], *outs[{max(n_out, 1)}];
  FILE *f = fopen(argv[1], "rb");
  for (int i = 0; i < {n_in}; ++i) {{
    ins[i] = malloc(in_sizes[i] + 1);
    if (fread(ins[i], 1, in_sizes[i], f) != in_sizes[i]) return 2;
  }}
  fclose(f);
  for (int i = 0; i < {n_out}; ++i) outs[i] = malloc(out_sizes[i] + 1);
  void *temp = malloc({res.name}_temp_size() + 1);
  {res.name}_run((const void *const *)ins, outs, temp);
  f = fopen(argv[2], "wb");
  for (int i = 0; i < {n_out}; ++i) fwrite(outs[i], 1, out_sizes[i], f);
  fclose(f);
  return 0;
}}
"""


def _build_and_run(tmp_path, res, args, cc, runner=()):
    (tmp_path / "driver.c").write_text(_driver(res))
    exe = tmp_path / "driver"
    subprocess.run([cc, "-O1", "-I", os.path.dirname(res.header_path), str(tmp_path / "driver.c"),
                    res.object_path, "-lm", "-o", str(exe)], check=True, capture_output=True)
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(a).tobytes() for a in args))
    subprocess.run([*runner, str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                   check=True, capture_output=True, timeout=60)
    data = (tmp_path / "out.bin").read_bytes()
    outs, off = [], 0
    for dims, dtype in res.output_shapes:
        n = int(np.prod(dims)) * np.dtype(dtype).itemsize
        outs.append(np.frombuffer(data[off:off + n], dtype=dtype).reshape(dims))
        off += n
    return outs


def _elf_machine(path) -> int:
    with open(path, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF"
    return int.from_bytes(head[18:20], "little")


@pytest.mark.parametrize("fun,args", [(_mlp, _args_mlp()),
                                      (_softmax_const, [np.random.default_rng(1)
                                                        .standard_normal((5, 33))
                                                        .astype(np.float32)])])
def test_x86_64_export_runs_in_a_c_driver(tmp_path, fun, args):
    if CC is None:
        pytest.skip("no C compiler (cc/gcc) on PATH")
    res = minijax.aot.export(fun, *args, path=str(tmp_path / "model"))
    assert _elf_machine(res.object_path) == EM_X86_64
    header = open(res.header_path).read()
    assert "void model_run(const void *const *inputs, void *const *outputs, void *temp);" \
        in header and "size_t model_temp_size(void);" in header
    got = _build_and_run(tmp_path, res, args, CC)
    want = minijax.jit(fun)(*[minijax.device_put(a) for a in args])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=2e-5, atol=2e-6)


def test_aarch64_export_is_an_aarch64_object(tmp_path):
    args = _args_mlp()
    res = minijax.aot.export(_mlp, *args, target="aarch64-linux-gnu",
                             path=str(tmp_path / "arm_model"))
    assert _elf_machine(res.object_path) == EM_AARCH64
    if ARM_CC is None or QEMU is None:
        pytest.skip("aarch64-linux-gnu-gcc and qemu-aarch64 not installed: object checked, "
                    "not run")
    got = _build_and_run(tmp_path, res, args, ARM_CC, runner=(QEMU, "-L",
                                                             "/usr/aarch64-linux-gnu"))
    want = minijax.jit(_mlp)(*[minijax.device_put(a) for a in args])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=2e-5, atol=2e-6)


def test_unsupported_op_is_named(tmp_path):
    def f(x):
        return lax.sort(x)
    with pytest.raises(NotImplementedError, match=r"cannot export operation 'sort'"):
        minijax.aot.export(f, np.ones(5, np.float32), path=str(tmp_path / "s"))
    assert not os.path.exists(tmp_path / "s.o")


def test_bad_target_and_name(tmp_path):
    with pytest.raises(ValueError, match="unknown target 'riscv'"):
        minijax.aot.export(_mlp, *_args_mlp(), target="riscv", path=str(tmp_path / "m"))
    with pytest.raises(ValueError, match="not a C identifier"):
        minijax.aot.export(_mlp, *_args_mlp(), path=str(tmp_path / "m"), name="a-b")


def test_temp_size_and_shapes_reported(tmp_path):
    res = minijax.aot.export(_mlp, *_args_mlp(), path=str(tmp_path / "m"))
    assert res.temp_bytes >= 0
    assert [d for d, _ in res.input_shapes] == [(7, 13), (13, 9), (9,)]
    assert [d for d, _ in res.output_shapes] == [(7,), (7, 9), (9,)]
