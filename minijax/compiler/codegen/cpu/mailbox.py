"""Mailboxes: handing a native call to another thread that waits for it in native code.

The devices of a multi-device program whose collectives all meet natively
(collectives.py) need no Python while they run. The thread of device 0 then prepares every
device's call and *posts* the others' to their device threads, which wait in `serve`, a
native loop: no thread wakes from sleep and none takes the GIL between the steps of a
training loop (waking a sleeping thread costs tens of microseconds on a virtual machine).

A mailbox is BOX_WORDS int64 words (the owner zeroes it):
- BOX_STATE: AWAY (the device thread is not in `serve`), SERVING, or CLAIMED (a poster is
  writing a call; the server may not leave meanwhile);
- BOX_GO: calls posted so far; BOX_DONE: calls finished so far (the server's);
- BOX_FN, BOX_BUFS: the posted kernel-ABI function `void(i8 **, i64, i64)` and its buffers;
- BOX_IDLE_NS: how long `serve` waits for a call before it leaves; BOX_CLOCK, BOX_YIELD:
  the addresses of `clock_gettime` and `sched_yield`.

`i64 post(box, fn, bufs)` claims a SERVING box by compare-and-swap, writes the call, bumps
BOX_GO and returns its ticket; when the server is AWAY it writes the call all the same and
returns minus the ticket: the caller must then wake the thread another way, and the thread
runs the call when it serves again (BOX_GO is past BOX_DONE). `void serve(box)` runs
every posted call in order and returns after BOX_IDLE_NS without one, leaving only by a
compare-and-swap SERVING -> AWAY, which fails while a poster holds the box. `void
wait(box, ticket)` spins until call `ticket` is done. Waiting threads pause, and yield
their core every _SPINS_PER_CHECK rounds.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.cpu import spin
from minijax.compiler.codegen.llvm_types import I8, I64

BOX_STATE, BOX_GO, BOX_DONE = 0, 8, 16
BOX_FN, BOX_BUFS, BOX_IDLE_NS, BOX_CLOCK, BOX_YIELD = 24, 25, 26, 27, 28
BOX_WORDS = 32
AWAY, SERVING, CLAIMED = 0, 1, 2
_SPINS_PER_CHECK = 1 << 8

_I8P = I8.as_pointer()
_I64P = I64.as_pointer()
CALL_FN = ir.FunctionType(ir.VoidType(), [_I8P.as_pointer(), I64, I64])


class MailboxEmitter:
    """Emits `PREFIX.post`, `PREFIX.serve` and `PREFIX.wait` into `module`."""

    def __init__(self, module: ir.Module, prefix: str, spin_hint: str):
        self.module, self.prefix, self.spin_hint = module, prefix, spin_hint
        self.post = self._emit_post()
        self.serve = self._emit_serve()
        self.wait = self._emit_wait()

    _slot = staticmethod(spin.slot)

    def _yield(self, b, box) -> None:
        spin.yield_core(b, b.load(self._slot(b, box, BOX_YIELD)))

    def _function(self, name, ret, args):
        fn = ir.Function(self.module, ir.FunctionType(ret, args), f"{self.prefix}.{name}")
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    # ------------------------------------------------------------------ post
    def _emit_post(self) -> ir.Function:
        fn, b = self._function("post", I64, [_I64P, I64, I64])
        box, call, bufs = fn.args
        claimed = fn.append_basic_block("claimed")
        away = fn.append_basic_block("away")
        pair = b.cmpxchg(self._slot(b, box, BOX_STATE), ir.Constant(I64, SERVING),
                         ir.Constant(I64, CLAIMED), "seq_cst", "seq_cst")
        b.cbranch(b.extract_value(pair, 1), claimed, away)
        for block, serving in ((claimed, True), (away, False)):
            b.position_at_end(block)
            b.store(call, self._slot(b, box, BOX_FN))
            b.store(bufs, self._slot(b, box, BOX_BUFS))
            ticket = b.add(b.load(self._slot(b, box, BOX_GO)), ir.Constant(I64, 1))
            b.store_atomic(ticket, self._slot(b, box, BOX_GO), "seq_cst", 8)
            if serving:
                b.store_atomic(ir.Constant(I64, SERVING), self._slot(b, box, BOX_STATE),
                               "seq_cst", 8)
                b.ret(ticket)
            else:
                b.ret(b.neg(ticket))
        return fn

    # ------------------------------------------------------------------ serve
    def _emit_serve(self) -> ir.Function:
        fn, b = self._function("serve", ir.VoidType(), [_I64P])
        box = fn.args[0]
        entry = b.block
        spec = spin.timespec(b)
        first_seen = b.load_atomic(self._slot(b, box, BOX_DONE), "seq_cst", 8)
        top = fn.append_basic_block("top")
        run = fn.append_basic_block("run")
        idle = fn.append_basic_block("idle")
        check = fn.append_basic_block("check")
        leave = fn.append_basic_block("leave")
        stay = fn.append_basic_block("stay")
        done = fn.append_basic_block("done")
        b.branch(top)

        b.position_at_end(top)
        seen = b.phi(I64, name="seen")
        spins = b.phi(I64, name="spins")
        deadline = b.phi(I64, name="deadline")          # 0: not yet measured
        seen.add_incoming(first_seen, entry)
        spins.add_incoming(ir.Constant(I64, 0), entry)
        deadline.add_incoming(ir.Constant(I64, 0), entry)
        go = b.load_atomic(self._slot(b, box, BOX_GO), "seq_cst", 8)
        b.cbranch(b.icmp_unsigned("!=", go, seen), run, idle)

        b.position_at_end(run)
        call = b.inttoptr(b.load(self._slot(b, box, BOX_FN)), CALL_FN.as_pointer())
        bufs = b.inttoptr(b.load(self._slot(b, box, BOX_BUFS)), _I8P.as_pointer())
        b.call(call, [bufs, ir.Constant(I64, 0), ir.Constant(I64, 0)])
        b.store_atomic(go, self._slot(b, box, BOX_DONE), "seq_cst", 8)
        seen.add_incoming(go, run)
        spins.add_incoming(ir.Constant(I64, 0), run)
        deadline.add_incoming(ir.Constant(I64, 0), run)
        b.branch(top)

        b.position_at_end(idle)
        spin.pause(b, self.spin_hint)
        more = b.add(spins, ir.Constant(I64, 1))
        seen.add_incoming(seen, idle)
        spins.add_incoming(more, idle)
        deadline.add_incoming(deadline, idle)
        b.cbranch(b.icmp_unsigned("<", more, ir.Constant(I64, _SPINS_PER_CHECK)), top, check)

        b.position_at_end(check)
        self._yield(b, box)
        now = spin.monotonic_ns(b, b.load(self._slot(b, box, BOX_CLOCK)), spec)
        limit = b.select(b.icmp_unsigned("==", deadline, ir.Constant(I64, 0)),
                         b.add(now, b.load(self._slot(b, box, BOX_IDLE_NS))), deadline)
        seen.add_incoming(seen, b.block)
        spins.add_incoming(ir.Constant(I64, 0), b.block)
        deadline.add_incoming(limit, b.block)
        b.cbranch(b.icmp_signed(">", now, limit), leave, top)

        b.position_at_end(leave)
        pair = b.cmpxchg(self._slot(b, box, BOX_STATE), ir.Constant(I64, SERVING),
                         ir.Constant(I64, AWAY), "seq_cst", "seq_cst")
        left = fn.append_basic_block("left")
        back = fn.append_basic_block("back")
        b.cbranch(b.extract_value(pair, 1), left, stay)
        # A call posted after the last look at BOX_GO but before the state changed would
        # be lost: look again, and serve it (SERVING again) if there is one.
        b.position_at_end(left)
        late = b.load_atomic(self._slot(b, box, BOX_GO), "seq_cst", 8)
        b.cbranch(b.icmp_unsigned("!=", late, seen), back, done)
        b.position_at_end(back)
        b.store_atomic(ir.Constant(I64, SERVING), self._slot(b, box, BOX_STATE), "seq_cst", 8)
        b.branch(stay)
        b.position_at_end(stay)                       # a poster holds the box: keep serving
        seen.add_incoming(seen, stay)
        spins.add_incoming(ir.Constant(I64, 0), stay)
        deadline.add_incoming(ir.Constant(I64, 0), stay)
        b.branch(top)
        b.position_at_end(done)
        b.ret_void()
        return fn

    # ------------------------------------------------------------------ wait
    def _emit_wait(self) -> ir.Function:
        fn, b = self._function("wait", ir.VoidType(), [_I64P, I64])
        box, ticket = fn.args
        entry = b.block
        top = fn.append_basic_block("top")
        spinning = fn.append_basic_block("spin")
        rest = fn.append_basic_block("rest")
        done = fn.append_basic_block("done")
        b.branch(top)
        b.position_at_end(top)
        spins = b.phi(I64, name="spins")
        spins.add_incoming(ir.Constant(I64, 0), entry)
        finished = b.load_atomic(self._slot(b, box, BOX_DONE), "seq_cst", 8)
        b.cbranch(b.icmp_unsigned(">=", finished, ticket), done, spinning)
        b.position_at_end(spinning)
        spin.pause(b, self.spin_hint)
        more = b.add(spins, ir.Constant(I64, 1))
        spins.add_incoming(more, spinning)
        b.cbranch(b.icmp_unsigned("<", more, ir.Constant(I64, _SPINS_PER_CHECK)), top, rest)
        b.position_at_end(rest)
        self._yield(b, box)
        spins.add_incoming(ir.Constant(I64, 0), b.block)
        b.branch(top)
        b.position_at_end(done)
        b.ret_void()
        return fn


__all__ = ["AWAY", "BOX_BUFS", "BOX_CLOCK", "BOX_DONE", "BOX_FN", "BOX_GO", "BOX_IDLE_NS",
           "BOX_STATE", "BOX_WORDS", "BOX_YIELD", "CLAIMED", "MailboxEmitter", "SERVING"]
