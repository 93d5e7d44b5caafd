"""hora as a torch.distributed backend for CPU tensors.

    import hora_torch                      # registers the backend "hora"
    torch.distributed.init_process_group(backend="hora")

Every init method torch offers works (env://, tcp://, file://, a store):
the ranks meet through torch's store, then talk over hora's shared-memory
and TCP transports. See docs/pytorch.md.
"""

import os as _os

import torch.distributed as _dist

# A rank's cores are shared here: torch computes (autograd runs while DDP's
# all-reduce is in flight) on the cores hora's thread waits on. A waiting
# hora thread therefore gives its core up after each poll instead of
# spinning on it, unless the user chose otherwise (docs/environment.md).
_os.environ.setdefault("HORA_WAIT", "yield")

from . import _C  # noqa: E402

ProcessGroupHora = _C.ProcessGroupHora
BACKEND_NAME = "hora"


def _create(store, rank, size, timeout):
    return _C.create_process_group(store, rank, size, timeout)


def _register():
    if hasattr(_dist.Backend, BACKEND_NAME.upper()):
        return  # already registered (this module imported twice by path)
    try:
        # torch 2.x: one backend per device type; hora takes CPU tensors.
        _dist.Backend.register_backend(BACKEND_NAME, _create, devices=["cpu"])
    except TypeError:
        # torch 1.x has no `devices` argument.
        _dist.Backend.register_backend(BACKEND_NAME, _create)


_register()
