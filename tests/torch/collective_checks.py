"""Every collective of the hora backend, checked against references that
each rank computes on its own from every rank's (deterministic) inputs:
exact for integers, and for floats inputs whose sums and products are
exact in any order (small integers, powers of two), so results must equal
the reference bit for bit on every rank. Average over a rank count that is
not a power of two rounds, so there all ranks are compared with each other
bitwise and with the reference within the type's precision.

Run as one rank of a job (env:// variables set), or imported by the
threads test, which calls run_all with a process group of its own."""

import math
import sys

import torch
import torch.distributed as dist

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
DTYPES = FLOATS + INTS + [torch.bool, torch.complex64]
OPS = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT,
       "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.AVG}
COUNTS = [0, 1, 7, 1031]


def values(dtype, rank, count, salt=0, op="sum"):
    """Rank `rank`'s input: a function of rank, position and salt only."""
    i = torch.arange(count, dtype=torch.int64) + salt
    if dtype == torch.bool:
        return (i + rank) % 3 == 0
    if op == "product":
        if dtype.is_floating_point or dtype.is_complex:
            v = torch.tensor([0.5, 1.0, 2.0, -1.0], dtype=torch.float64)[(i + rank) % 4]
        elif dtype == torch.uint8:
            v = (i + rank) % 2 + 1
        else:
            v = (i + rank) % 3 - 1
    else:
        v = (rank * 7 + i * 3) % 11 - 5
        if dtype == torch.uint8:
            v = v + 5
    if dtype.is_complex:
        return torch.complex(v.double(), (v * 2 - 1).double()).to(dtype)
    return v.to(dtype)


def reference(dtype, op, inputs):
    """The reduction of every rank's input, computed here in a wide type."""
    if dtype == torch.bool:
        stacked = torch.stack(inputs)
        return stacked.any(0) if op in ("sum", "max") else stacked.all(0)
    wide = torch.complex128 if dtype.is_complex else (
        torch.float64 if dtype.is_floating_point else torch.int64)
    stacked = torch.stack([t.to(wide) for t in inputs])
    n = len(inputs)
    if op == "sum":
        out = stacked.sum(0)
    elif op == "product":
        out = stacked.prod(0)
    elif op == "min":
        out = stacked.amin(0)
    elif op == "max":
        out = stacked.amax(0)
    elif dtype.is_floating_point or dtype.is_complex:
        out = stacked.sum(0) / n
    else:
        out = torch.div(stacked.sum(0), n, rounding_mode="trunc")
    return out.to(dtype)


def valid(dtype, op):
    if dtype == torch.bool:
        return op != "avg"
    if dtype.is_complex:
        return op in ("sum", "avg")
    return True


def strided(t):
    """The same values in a non-contiguous tensor (every other element)."""
    base = torch.empty(t.numel() * 2, dtype=t.dtype)
    view = base[::2]
    view.copy_(t)
    return view


class Checker:
    def __init__(self, group=None):
        self.group = group
        self.rank = dist.get_rank(group)
        self.n = dist.get_world_size(group)
        self.failures = []
        self.checks = 0

    def expect_equal(self, what, got, want):
        self.checks += 1
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            self.failures.append(f"rank {self.rank}: {what}: got {got.flatten()[:8].tolist()} "
                                 f"want {want.flatten()[:8].tolist()} ({got.dtype}, {tuple(got.shape)})")

    def expect_close(self, what, got, want):
        self.checks += 1
        tol = 1e-2 if got.dtype in (torch.float16, torch.bfloat16) else 1e-6
        if not torch.allclose(got.to(torch.complex128 if got.is_complex() else torch.float64),
                              want.to(torch.complex128 if want.is_complex() else torch.float64),
                              rtol=tol, atol=tol):
            self.failures.append(f"rank {self.rank}: {what}: got {got[:8].tolist()} want {want[:8].tolist()}")

    def expect_same_on_every_rank(self, what, t):
        """Bitwise: every rank's copy of a result has the same bytes."""
        dense = torch.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1))
        raw = dense.view(torch.uint8)
        copies = [torch.empty_like(raw) for _ in range(self.n)]
        dist.all_gather(copies, raw, group=self.group)
        self.checks += 1
        if not all(torch.equal(c, copies[0]) for c in copies):
            self.failures.append(f"rank {self.rank}: {what}: results differ between ranks")

    # ------------------------------------------------------------- reduce
    def all_reduce(self):
        for dtype in DTYPES:
            for op, torch_op in OPS.items():
                if not valid(dtype, op):
                    continue
                for count in COUNTS:
                    for layout in ("contiguous", "strided"):
                        mine = values(dtype, self.rank, count, op=op)
                        t = mine.clone() if layout == "contiguous" else strided(mine)
                        dist.all_reduce(t, op=torch_op, group=self.group)
                        want = reference(dtype, op, [values(dtype, r, count, op=op) for r in range(self.n)])
                        what = f"all_reduce {op} {dtype} x{count} {layout}"
                        exact = op != "avg" or (self.n & (self.n - 1)) == 0 or not (
                            dtype.is_floating_point or dtype.is_complex)
                        if exact:
                            self.expect_equal(what, t, want)
                        else:
                            self.expect_close(what, t, want)
                            self.expect_same_on_every_rank(what, t)
        # A long message: many slots and steps of the ring.
        count = 262147
        t = values(torch.float32, self.rank, count)
        dist.all_reduce(t, group=self.group)
        self.expect_equal(f"all_reduce sum float32 x{count}", t,
                          reference(torch.float32, "sum", [values(torch.float32, r, count) for r in range(self.n)]))

    def all_reduce_coalesced(self):
        sizes = [5, 0, 1031, 3]
        tensors = [values(torch.float64, self.rank, c, salt=k) for k, c in enumerate(sizes)]
        dist.all_reduce_coalesced(tensors, group=self.group)
        for k, c in enumerate(sizes):
            want = reference(torch.float64, "sum", [values(torch.float64, r, c, salt=k) for r in range(self.n)])
            self.expect_equal(f"all_reduce_coalesced tensor {k}", tensors[k], want)

    def reduce(self):
        for dtype in (torch.float32, torch.int64, torch.bool):
            for root in range(self.n):
                t = values(dtype, self.rank, 1031)
                dist.reduce(t, dst=root, op=dist.ReduceOp.MAX, group=self.group)
                if self.rank == root:
                    want = reference(dtype, "max", [values(dtype, r, 1031) for r in range(self.n)])
                    self.expect_equal(f"reduce max {dtype} to {root}", t, want)

    def reduce_scatter(self):
        for dtype in (torch.float32, torch.int16, torch.bfloat16):
            for count in (0, 1, 1031):
                blocks = [values(dtype, self.rank, count, salt=100 * j) for j in range(self.n)]
                out = torch.full((count,), 7, dtype=dtype)
                dist.reduce_scatter(out, blocks, group=self.group)
                want = reference(dtype, "sum", [values(dtype, r, count, salt=100 * self.rank) for r in range(self.n)])
                self.expect_equal(f"reduce_scatter {dtype} x{count}", out, want)
                out2 = torch.full((count,), 7, dtype=dtype)
                dist.reduce_scatter_tensor(out2, torch.cat(blocks), group=self.group)
                self.expect_equal(f"reduce_scatter_tensor {dtype} x{count}", out2, want)

    # ------------------------------------------------------------- move
    def broadcast(self):
        for dtype in DTYPES:
            for root in range(self.n):
                mine = values(dtype, root, 1031) if self.rank == root else torch.zeros(1031, dtype=dtype)
                t = strided(mine)
                dist.broadcast(t, src=root, group=self.group)
                self.expect_equal(f"broadcast {dtype} from {root} (strided)", t, values(dtype, root, 1031))

    def all_gather(self):
        for dtype in (torch.float16, torch.int8, torch.bool, torch.int16, torch.complex64):
            for count in (0, 1, 1031):
                outs = [torch.zeros(count, dtype=dtype) for _ in range(self.n)]
                dist.all_gather(outs, values(dtype, self.rank, count), group=self.group)
                for r in range(self.n):
                    self.expect_equal(f"all_gather {dtype} x{count} block {r}", outs[r], values(dtype, r, count))
                flat = torch.zeros(count * self.n, dtype=dtype)
                dist.all_gather_into_tensor(flat, values(dtype, self.rank, count), group=self.group)
                want = torch.cat([values(dtype, r, count) for r in range(self.n)])
                self.expect_equal(f"all_gather_into_tensor {dtype} x{count}", flat, want)

    def gather_scatter(self):
        for root in range(self.n):
            mine = values(torch.int32, self.rank, 1031, salt=root)
            outs = [torch.zeros(1031, dtype=torch.int32) for _ in range(self.n)] if self.rank == root else None
            dist.gather(mine, gather_list=outs, dst=root, group=self.group)
            if self.rank == root:
                for r in range(self.n):
                    self.expect_equal(f"gather to {root} block {r}", outs[r], values(torch.int32, r, 1031, salt=root))
            pieces = [values(torch.float64, root, 513, salt=j) for j in range(self.n)] if self.rank == root else None
            out = torch.zeros(513, dtype=torch.float64)
            dist.scatter(out, scatter_list=pieces, src=root, group=self.group)
            self.expect_equal(f"scatter from {root}", out, values(torch.float64, root, 513, salt=self.rank))

    def all_to_all(self):
        width = 3
        # Rank k sends k + j + 1 rows to rank j: every pair its own size.
        def rows(k, j):
            return k + j + 1
        send = torch.cat([values(torch.int64, self.rank, rows(self.rank, j) * width, salt=1000 * j)
                          for j in range(self.n)]).view(-1, width)
        recv = torch.zeros(sum(rows(j, self.rank) for j in range(self.n)), width, dtype=torch.int64)
        dist.all_to_all_single(recv, send, output_split_sizes=[rows(j, self.rank) for j in range(self.n)],
                               input_split_sizes=[rows(self.rank, j) for j in range(self.n)], group=self.group)
        want = torch.cat([values(torch.int64, j, rows(j, self.rank) * width, salt=1000 * self.rank)
                          for j in range(self.n)]).view(-1, width)
        self.expect_equal("all_to_all_single with split sizes", recv, want)

        equal = torch.cat([values(torch.float32, self.rank, 6, salt=10 * j) for j in range(self.n)])
        out = torch.zeros_like(equal)
        dist.all_to_all_single(out, equal, group=self.group)
        want = torch.cat([values(torch.float32, j, 6, salt=10 * self.rank) for j in range(self.n)])
        self.expect_equal("all_to_all_single equal split", out, want)

        ins = [values(torch.bfloat16, self.rank, 5 + j, salt=j) for j in range(self.n)]
        outs = [torch.zeros(5 + self.rank, dtype=torch.bfloat16) for _ in range(self.n)]
        dist.all_to_all(outs, ins, group=self.group)
        for j in range(self.n):
            self.expect_equal(f"all_to_all from {j}", outs[j], values(torch.bfloat16, j, 5 + self.rank, salt=self.rank))

    def point_to_point(self):
        right, left = (self.rank + 1) % self.n, (self.rank - 1) % self.n
        peer_of = dist.get_global_rank if self.group is not None and hasattr(dist, "get_global_rank") else None
        to = peer_of(self.group, right) if peer_of else right
        frm = peer_of(self.group, left) if peer_of else left
        out = values(torch.float64, self.rank, 1031, salt=5)
        got = torch.zeros(1031, dtype=torch.float64)
        if self.n == 1:
            return
        reqs = [dist.isend(out, to, group=self.group), dist.irecv(got, frm, group=self.group)]
        for req in reqs:
            req.wait()
        self.expect_equal("isend/irecv around the ring", got, values(torch.float64, left, 1031, salt=5))
        if self.rank % 2 == 0:
            dist.send(out, to, group=self.group)
            dist.recv(got, frm, group=self.group)
        else:
            dist.recv(got, frm, group=self.group)
            dist.send(out, to, group=self.group)
        self.expect_equal("send/recv around the ring", got, values(torch.float64, left, 1031, salt=5))
        # Every rank sends first. torch 1.x runs a batch as one group of
        # transfers (coalescing), which progress together: messages far
        # larger than any transport buffer pass. torch 2.x runs a batch of
        # CPU tensors as single calls, which only pass when the message
        # fits the buffer (docs/pytorch.md). Mixed dtypes in one batch.
        grouped = int(torch.__version__.split(".")[0]) < 2
        length = 1 << 21 if grouped else 1031
        big = values(torch.float32, self.rank, length, salt=9)
        got_big = torch.zeros(length)
        small = values(torch.int16, self.rank, 7)
        got_small = torch.zeros(7, dtype=torch.int16)
        ops = [dist.P2POp(dist.isend, big, to, self.group), dist.P2POp(dist.isend, small, to, self.group),
               dist.P2POp(dist.irecv, got_big, frm, self.group),
               dist.P2POp(dist.irecv, got_small, frm, self.group)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        self.expect_equal(f"batch_isend_irecv, {length} floats around the ring", got_big,
                          values(torch.float32, left, length, salt=9))
        self.expect_equal("batch_isend_irecv, int16", got_small, values(torch.int16, left, 7))

    def asynchronous(self):
        """Works return at once, complete in issue order, and carry a future
        whose value is the output tensors (what DDP's reducer reads)."""
        tensors = [values(torch.float32, self.rank, 1031, salt=k) for k in range(6)]
        works = [dist.all_reduce(t, async_op=True, group=self.group) for t in tensors]
        futures = [w.get_future() for w in works]
        for k, (w, f) in enumerate(zip(works, futures)):
            w.wait()
            self.checks += 1
            if not w.is_completed():
                self.failures.append(f"rank {self.rank}: work {k} not completed after wait()")
            value = f.wait()
            want = reference(torch.float32, "sum", [values(torch.float32, r, 1031, salt=k) for r in range(self.n)])
            self.expect_equal(f"async all_reduce {k}", tensors[k], want)
            self.expect_equal(f"future value {k}", value[0], want)
        dist.barrier(group=self.group)

    def all_gather_coalesced(self):
        """Several tensors of several shapes gathered from every rank in one call."""
        shapes = [(3,), (2, 5), (0,), (7,)]
        ins = [values(torch.float32, self.rank, math.prod(s), salt=k).reshape(s) for k, s in enumerate(shapes)]
        outs = [[torch.empty(s) for s in shapes] for _ in range(self.n)]
        dist.all_gather_coalesced(outs, ins, group=self.group)
        for r in range(self.n):
            for k, s in enumerate(shapes):
                self.expect_equal(f"all_gather_coalesced, rank {r}'s tensor {k}", outs[r][k],
                                  values(torch.float32, r, math.prod(s), salt=k).reshape(s))

    def collective_inside_a_callback(self):
        """A future's callback that issues a collective and waits for it, as
        DDP's PowerSGD hook does: that collective runs while the callback
        waits (callbacks do not run on the thread that runs collectives)."""
        def inner(_):
            t = torch.full((5,), float(self.rank + 1))
            dist.all_reduce(t, group=self.group)
            return t
        outer = dist.all_reduce(torch.ones(3), async_op=True, group=self.group).get_future()
        got = outer.then(inner).wait()
        self.expect_equal("all_reduce waited for inside a future's callback", got,
                          torch.full((5,), float(sum(r + 1 for r in range(self.n)))))

    def callback_waiting_for_a_later_work(self):
        """A future's callback that waits for a later Work's future: that
        Work's completion must not queue behind the callback. Each try on a
        group of its own (whose completions have a single thread so far),
        one rank late, so that the other finds both Works done at once and
        the two completions race for that thread."""
        import os
        import time
        for attempt in range(4):
            group = dist.new_group(list(range(self.n)))
            if self.rank == 1:
                time.sleep(0.2)
            first = dist.all_reduce(torch.ones(4), async_op=True, group=group)
            later = dist.all_reduce(torch.zeros(0), async_op=True, group=group)
            both = first.get_future().then(lambda _: later.get_future().wait())
            deadline = time.monotonic() + 20
            while not both.done() and time.monotonic() < deadline:
                time.sleep(0.001)
            if not both.done():
                # Nothing would ever end the wait: report and leave.
                print(f"rank {self.rank}: a callback waiting for a later Work's future never returned "
                      f"(try {attempt})", flush=True)
                os._exit(1)
            self.checks += 1
            dist.destroy_process_group(group)

    def misaligned(self):
        """Contiguous tensors that do not start on an element (torch.frombuffer
        at an odd byte offset): staged like strided ones, never refused."""
        for dtype in (torch.float32, torch.float64, torch.int64, torch.float16, torch.complex64):
            count = 1031
            want = reference(dtype, "sum", [values(dtype, r, count, salt=5) for r in range(self.n)])
            size = torch.empty((), dtype=dtype).element_size()
            buffer = bytearray(size * (count + 1))
            t = torch.frombuffer(buffer, dtype=dtype, count=count, offset=1)
            t.copy_(values(dtype, self.rank, count, salt=5))
            dist.all_reduce(t, group=self.group)
            self.expect_equal(f"all_reduce of a {dtype} tensor at byte offset 1", t, want)

    def run_all(self):
        for check in (self.all_reduce, self.all_reduce_coalesced, self.reduce, self.reduce_scatter,
                      self.broadcast, self.all_gather, self.gather_scatter, self.all_to_all,
                      self.point_to_point, self.asynchronous, self.all_gather_coalesced,
                      self.collective_inside_a_callback, self.callback_waiting_for_a_later_work,
                      self.misaligned):
            check()
        return self.failures


def subgroup_checks(checker):
    """new_group: a communicator of its own for the even ranks, next to the
    world's, each giving its own members' results."""
    rank, n = dist.get_rank(), dist.get_world_size()
    evens = list(range(0, n, 2))
    sub = dist.new_group(evens)  # collective over the world, members or not
    if rank in evens:
        t = torch.full((1031,), rank + 1, dtype=torch.int64)
        dist.all_reduce(t, group=sub)
        checker.expect_equal("all_reduce in new_group(evens)", t,
                             torch.full((1031,), sum(r + 1 for r in evens), dtype=torch.int64))
        b = torch.full((7,), float(rank))
        dist.broadcast(b, src=evens[-1], group=sub)  # src is a global rank
        checker.expect_equal("broadcast in new_group(evens)", b, torch.full((7,), float(evens[-1])))
    w = torch.ones(3)
    dist.all_reduce(w)  # the world's group still works beside it
    checker.expect_equal("all_reduce on the world after new_group", w, torch.full((3,), float(n)))


def main():
    import datetime
    import hora_torch  # noqa: F401  registers "hora"
    init = sys.argv[1] if len(sys.argv) > 1 else "env://"
    import os
    # tcp:// and file:// take rank and world size as arguments, not from
    # the environment.
    where = {} if init == "env://" else dict(rank=int(os.environ["RANK"]),
                                             world_size=int(os.environ["WORLD_SIZE"]))
    dist.init_process_group("hora", init_method=init, timeout=datetime.timedelta(seconds=60), **where)
    checker = Checker()
    checker.run_all()
    subgroup_checks(checker)
    failures = checker.failures
    for failure in failures[:40]:
        print(failure)
    print(f"rank {checker.rank}: {checker.checks} checks, {len(failures)} failed")
    dist.destroy_process_group()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
