"""The hora torch.distributed backend (hora_torch), as users call it:
every collective checked exactly with 2, 3 and 4 rank processes and every
init method; ranks as threads of one process; bad arguments, a dead peer
and a silent peer each raising a clear error instead of hanging."""

import os
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from ranks import free_port, run_ranks  # noqa: E402

CHECKS = os.path.join(HERE, "collective_checks.py")
FAILURES = os.path.join(HERE, "failure_cases.py")


def results(ranks):
    """Each rank's RESULT lines as (what, seconds, message)."""
    out = {}
    for r in ranks:
        lines = [l.split(" ", 3) for l in r.output.splitlines() if l.startswith("RESULT ")]
        out[r.rank] = [(l[1], float(l[2]), l[3] if len(l) > 3 else "") for l in lines]
    return out


class Collectives(unittest.TestCase):
    def check_job(self, nranks, init="env://"):
        ranks = run_ranks(CHECKS, nranks, args=[init])
        for r in ranks:
            self.assertEqual(r.returncode, 0, r)
            self.assertRegex(r.output, r"rank \d+: \d+ checks, 0 failed")

    def test_two_ranks_env_init(self):
        self.check_job(2)

    def test_three_ranks_tcp_init(self):
        self.check_job(3, f"tcp://127.0.0.1:{free_port()}")

    def test_four_ranks_file_init(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.check_job(4, "file://" + os.path.join(tmp, "rendezvous"))


class Threads(unittest.TestCase):
    def test_ranks_as_threads_of_one_process(self):
        import thread_checks
        self.assertEqual(thread_checks.run_threads(3), [])


class Failures(unittest.TestCase):
    def test_bad_arguments_raise_at_once_and_leave_the_group_working(self):
        ranks = run_ranks(FAILURES, 2, args=["bad_arguments"])
        for r in ranks:
            self.assertEqual(r.returncode, 0, r)
        for rank, lines in results(ranks).items():
            whats = [l[0] for l in lines]
            self.assertEqual(whats, ["raised"] * 5 + ["ok"], lines)
            messages = " ".join(l[2] for l in lines)
            self.assertIn("ReduceOp.BAND is not supported", messages)
            self.assertIn("needs one tensor per rank (2), got 3", messages)
            self.assertIn("ReduceOp.AVG has no meaning on boolean tensors", messages)
            self.assertIn("not divisible by the group size 2", messages)
            self.assertTrue(all(l[1] < 1.0 for l in lines[:5]), lines)

    def test_a_dead_peer_raises_on_every_survivor_at_once(self):
        ranks = run_ranks(FAILURES, 3, args=["peer_dies"])
        self.assertEqual(ranks[2].returncode, 3, ranks[2])
        for rank in (0, 1):
            self.assertEqual(ranks[rank].returncode, 0, ranks[rank])
            (what, seconds, message), = results(ranks)[rank]
            self.assertEqual(what, "raised", message)
            self.assertIn("rank 2", message)
            # The operating system says the peer is gone: no deadline needed.
            self.assertLess(seconds, 5.0, message)

    def test_a_receive_of_another_tag_raises_instead_of_taking_another_message(self):
        ranks = run_ranks(FAILURES, 2, args=["tags_crossed"])
        for r in ranks:
            self.assertEqual(r.returncode, 0, r)
        for rank, lines in results(ranks).items():
            (what, seconds, message), = lines
            self.assertEqual(what, "raised", f"rank {rank}: {message}")
            self.assertIn("tag 7 here, 5 at rank 0", message)
            self.assertLess(seconds, 5.0, message)

    def test_the_init_timeout_bounds_a_wait_on_a_silent_peer(self):
        ranks = run_ranks(FAILURES, 2, args=["peer_silent"], extra_env={"CASE_TIMEOUT_S": "3"},
                          deadline_s=40)
        (what, seconds, message), = results(ranks)[0]
        self.assertEqual(what, "raised", message)
        self.assertIn("rank 1", message)
        self.assertRegex(message, re.compile("no progress for 3 s"))
        self.assertGreaterEqual(seconds, 2.5, message)
        self.assertLess(seconds, 15.0, message)


if __name__ == "__main__":
    unittest.main(verbosity=2)
