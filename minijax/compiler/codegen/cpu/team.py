"""Teams: threads sharing the pieces of a native loop's large ops, without Python.

A native loop (native_loop.py) whose kernel calls or gemms are marked `parallel` runs on a
team: the calling thread runs the loop and *publishes* each such op; the pool threads lent
to the call run `PREFIX.worker(team)` and take pieces of whatever is published until the
caller ends the team. Every op is cut into as many pieces as the team has threads.

The team block is TEAM_SLOTS int64 slots, zeroed by the caller, holding
- TEAM_WORD: the atomic work word `phase << 32 | pieces << 16 | next piece`;
- TEAM_DONE: the number of pieces finished so far (all phases);
- TEAM_OP, TEAM_ARGS: the published item function `void(i8 **args, i64 piece, i64 pieces)`
  and its argument array;
- TEAM_SIZE: the team size (written by the caller's Python); TEAM_YIELD: the address of
  `sched_yield` (or 0); TEAM_EXPECT: the pieces published so far (the caller's alone).

Publishing writes the op, then the word with the next phase. Every thread claims a piece by
compare-and-swap on the whole word, so a claim can only succeed in the phase it read; it
runs the piece and counts it done. The caller takes pieces too and then waits only for
pieces another thread claimed: a lent thread that starts late (or not at all, on a busy
machine) costs nothing. The op and its arguments stay valid while any claimed piece runs,
because the caller publishes the next op only once every piece is done. A team of one runs
each op whole on the caller, with no atomics. Waiting threads spin with the CPU's pause
hint and yield their core after _SPINS_BEFORE_YIELD rounds.
"""

from __future__ import annotations

import llvmlite.ir as ir

from minijax.compiler.codegen.cpu import spin
from minijax.compiler.codegen.llvm_types import I8, I64

TEAM_WORD, TEAM_DONE, TEAM_OP, TEAM_ARGS, TEAM_SIZE, TEAM_YIELD, TEAM_EXPECT = (
    0, 8, 16, 17, 18, 19, 20)
TEAM_SLOTS = 24
_STOP_PHASE = 0xFFFFFFFF
_SPINS_BEFORE_YIELD = 4096
_I8P = I8.as_pointer()
_I64P = I64.as_pointer()
ITEM_FN = ir.FunctionType(ir.VoidType(), [_I8P.as_pointer(), I64, I64])


def piece_range(b: ir.IRBuilder, total, piece, pieces):
    """[start, end) of `piece` of `pieces` near-equal parts of range(total) (i64 values)."""
    start = b.udiv(b.mul(total, piece), pieces)
    end = b.udiv(b.mul(total, b.add(piece, ir.Constant(I64, 1))), pieces)
    return start, end


class TeamEmitter:
    """Emits a loop's team functions (`PREFIX.dispatch`, `PREFIX.worker`) into `module`."""

    def __init__(self, module: ir.Module, prefix: str, spin_hint: str):
        self.module, self.prefix, self.spin_hint = module, prefix, spin_hint
        self._items = 0
        self.dispatch = self._emit_dispatch()
        self.worker = self._emit_worker()

    def item_function(self) -> tuple[ir.Function, ir.IRBuilder]:
        """A new item function and a builder at its entry (the caller emits its body)."""
        fn = ir.Function(self.module, ITEM_FN, f"{self.prefix}.item{self._items}")
        self._items += 1
        fn.linkage = "internal"
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    # ------------------------------------------------------------------ pieces
    _slot = staticmethod(spin.slot)

    def _spin(self, b: ir.IRBuilder, team, spins):
        """One spin-wait round: pause, and yield the core every _SPINS_BEFORE_YIELD rounds;
        returns the next value of the `spins` counter."""
        spin.pause(b, self.spin_hint)
        spins = b.add(spins, ir.Constant(I64, 1))
        due = b.icmp_unsigned(">=", spins, ir.Constant(I64, _SPINS_BEFORE_YIELD))
        with b.if_then(due):
            spin.yield_core(b, b.load(self._slot(b, team, TEAM_YIELD)))
        return b.select(due, ir.Constant(I64, 0), spins)

    def _try_claim(self, b: ir.IRBuilder, team, word, on_ran, on_none, on_lost):
        """If `word` offers a piece, claim it by CAS and run it (then branch to on_ran);
        branch to on_none when it offers none, to on_lost when another thread changed the
        word first."""
        fn = b.function
        item = b.and_(word, ir.Constant(I64, 0xFFFF))
        pieces = b.and_(b.lshr(word, ir.Constant(I64, 16)), ir.Constant(I64, 0xFFFF))
        cas = fn.append_basic_block("cas")
        run = fn.append_basic_block("run")
        b.cbranch(b.icmp_unsigned("<", item, pieces), cas, on_none)
        b.position_at_end(cas)
        pair = b.cmpxchg(self._slot(b, team, TEAM_WORD), word,
                         b.add(word, ir.Constant(I64, 1)), "seq_cst", "seq_cst")
        b.cbranch(b.extract_value(pair, 1), run, on_lost)
        b.position_at_end(run)
        op = b.inttoptr(b.load(self._slot(b, team, TEAM_OP)), ITEM_FN.as_pointer())
        args = b.inttoptr(b.load(self._slot(b, team, TEAM_ARGS)), _I8P.as_pointer())
        b.call(op, [args, item, pieces])
        b.atomic_rmw("add", self._slot(b, team, TEAM_DONE), ir.Constant(I64, 1), "seq_cst")
        b.branch(on_ran)

    # ------------------------------------------------------------------ dispatch
    def _emit_dispatch(self) -> ir.Function:
        """`void dispatch(i64 *team, item fn, i8 **args)`: run one op on the team."""
        fnty = ir.FunctionType(ir.VoidType(), [_I64P, ITEM_FN.as_pointer(),
                                               _I8P.as_pointer()])
        fn = ir.Function(self.module, fnty, f"{self.prefix}.dispatch")
        fn.linkage = "internal"
        team, op, args = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        alone = fn.append_basic_block("alone")
        publish = fn.append_basic_block("publish")
        size = b.load(self._slot(b, team, TEAM_SIZE))
        b.cbranch(b.icmp_unsigned("<=", size, ir.Constant(I64, 1)), alone, publish)
        b.position_at_end(alone)
        b.call(op, [args, ir.Constant(I64, 0), ir.Constant(I64, 1)])
        b.ret_void()

        b.position_at_end(publish)
        b.store(b.ptrtoint(op, I64), self._slot(b, team, TEAM_OP))
        b.store(b.ptrtoint(args, I64), self._slot(b, team, TEAM_ARGS))
        expect = b.add(b.load(self._slot(b, team, TEAM_EXPECT)), size)
        b.store(expect, self._slot(b, team, TEAM_EXPECT))
        word_slot = self._slot(b, team, TEAM_WORD)
        old = b.load_atomic(word_slot, "seq_cst", 8)
        phase = b.add(b.lshr(old, ir.Constant(I64, 32)), ir.Constant(I64, 1))
        b.store_atomic(b.or_(b.shl(phase, ir.Constant(I64, 32)),
                             b.shl(size, ir.Constant(I64, 16))), word_slot, "seq_cst", 8)
        claim = fn.append_basic_block("claim")
        wait = fn.append_basic_block("wait")
        b.branch(claim)
        b.position_at_end(claim)
        self._try_claim(b, team, b.load_atomic(word_slot, "seq_cst", 8), claim, wait, claim)

        # The caller's own claims failed: every piece is taken; wait for the others'.
        b.position_at_end(wait)
        check = fn.append_basic_block("check")
        spinning = fn.append_basic_block("spin")
        done = fn.append_basic_block("done")
        b.branch(check)
        b.position_at_end(check)
        spins = b.phi(I64)
        spins.add_incoming(ir.Constant(I64, 0), wait)
        finished = b.load_atomic(self._slot(b, team, TEAM_DONE), "seq_cst", 8)
        b.cbranch(b.icmp_unsigned(">=", finished, expect), done, spinning)
        b.position_at_end(spinning)
        spins.add_incoming(self._spin(b, team, spins), b.block)
        b.branch(check)
        b.position_at_end(done)
        b.ret_void()
        return fn

    # ------------------------------------------------------------------ worker
    def _emit_worker(self) -> ir.Function:
        """`void worker(i8 *team)`: take pieces until the phase says stop."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [_I8P]),
                         f"{self.prefix}.worker")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        team = b.bitcast(fn.args[0], _I64P)
        top = fn.append_basic_block("top")
        idle = fn.append_basic_block("idle")
        stop = fn.append_basic_block("stop")
        entry = b.block
        b.branch(top)
        b.position_at_end(top)
        spins = b.phi(I64)
        spins.add_incoming(ir.Constant(I64, 0), entry)
        word = b.load_atomic(self._slot(b, team, TEAM_WORD), "seq_cst", 8)
        going = fn.append_basic_block("going")
        b.cbranch(b.icmp_unsigned("==", b.lshr(word, ir.Constant(I64, 32)),
                                  ir.Constant(I64, _STOP_PHASE)), stop, going)
        b.position_at_end(going)
        ran = fn.append_basic_block("ran")
        self._try_claim(b, team, word, ran, idle, ran)
        b.position_at_end(ran)
        spins.add_incoming(ir.Constant(I64, 0), ran)
        b.branch(top)
        b.position_at_end(idle)
        spins.add_incoming(self._spin(b, team, spins), b.block)
        b.branch(top)
        b.position_at_end(stop)
        b.ret_void()
        return fn

    def emit_stop(self, b: ir.IRBuilder, team) -> None:
        """End the team (the lent threads return): the caller's last act in the loop."""
        b.store_atomic(ir.Constant(I64, _STOP_PHASE << 32), self._slot(b, team, TEAM_WORD),
                       "seq_cst", 8)


__all__ = ["ITEM_FN", "TEAM_SIZE", "TEAM_SLOTS", "TEAM_YIELD", "TeamEmitter", "piece_range"]
