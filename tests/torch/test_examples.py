"""The DDP programs of examples/torch, on hora and on gloo, launched by
torchrun and by hora-run. Each run saves every rank's final parameters and
the DistributedSampler's indices. With 2 ranks a gradient average is one
sum of two floats, which does not depend on order: hora's parameters must
equal gloo's bit for bit. With 3 and 4 ranks the order of a sum may
differ between the backends: parameters must agree within TOLERANCE.
The sampler's indices must equal gloo's in every case, and every rank
must end with the same parameters as rank 0, bit for bit."""

import os
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ranks import free_port  # noqa: E402

EXAMPLES = os.path.join(HERE, "..", "..", "examples", "torch")
HORA_RUN = os.environ.get("HORA_RUN", "hora-run")
# Largest absolute difference allowed between hora's and gloo's parameters
# when a sum of 3 or 4 floats may be taken in a different order.
TOLERANCE = 1e-6


def launch(launcher, nranks, program, backend, out, workdir):
    script = os.path.join(EXAMPLES, program)
    args = [script, "--backend", backend, "--out", out]
    if program == "conv_net.py":
        args += ["--checkpoint", os.path.join(workdir, f"checkpoint-{backend}-{nranks}.pt")]
    if launcher == "torchrun":
        # Debian's torch 1.13 on Python 3.11 fails in torchrun's default
        # output handling; redirecting to a log directory avoids it.
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nranks),
                   "--master_port", str(free_port()), "--redirects", "1", "--tee", "1",
                   "--log_dir", os.path.join(workdir, "torchrun-logs")] + args
    else:
        command = [HORA_RUN, "-n", str(nranks), sys.executable] + args
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=240)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-4000:]}")
    return [torch.load(f"{out}.rank{r}") for r in range(nranks)]


class Examples(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_job(self, launcher, nranks, program, backend):
        out = os.path.join(self.tmp.name, f"{program}-{backend}-{launcher}-{nranks}")
        ranks = launch(launcher, nranks, program, backend, out, self.tmp.name)
        first = ranks[0]["parameters"]
        for r, saved in enumerate(ranks):
            for name, value in saved["parameters"].items():
                self.assertTrue(torch.equal(value, first[name]),
                                f"{backend}: rank {r}'s {name} differs from rank 0's")
        return ranks

    def compare(self, program, nranks, launchers=("hora-run",)):
        reference = self.run_job("hora-run", nranks, program, "gloo")
        for launcher in launchers:
            hora = self.run_job(launcher, nranks, program, "hora")
            for r in range(nranks):
                self.assertEqual(hora[r]["indices"], reference[r]["indices"],
                                 f"rank {r}'s sampler indices differ from gloo's")
            for name, want in reference[0]["parameters"].items():
                got = hora[0]["parameters"][name]
                if nranks == 2:
                    self.assertTrue(torch.equal(got, want),
                                    f"{launcher}: {name} differs from gloo's (max "
                                    f"{(got - want).abs().max().item():.3g})")
                else:
                    self.assertLessEqual((got - want).abs().max().item(), TOLERANCE, name)

    def test_conv_net_two_ranks_bitwise_under_torchrun_and_hora_run(self):
        self.compare("conv_net.py", 2, launchers=("torchrun", "hora-run"))

    def test_conv_net_three_ranks(self):
        self.compare("conv_net.py", 3)

    def test_conv_net_four_ranks(self):
        self.compare("conv_net.py", 4)

    def test_linear_regression_two_ranks_bitwise_under_torchrun_and_hora_run(self):
        self.compare("linear_regression.py", 2, launchers=("torchrun", "hora-run"))

    def test_linear_regression_four_ranks(self):
        self.compare("linear_regression.py", 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
