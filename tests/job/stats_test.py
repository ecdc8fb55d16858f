"""Unit tests of the job report's statistics and straggler logic
(python_shim/gpuslack/job/stats.py, stragglers.py), on hand-made ranks."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python_shim"))
from gpuslack.job import load, stats, stragglers  # noqa: E402


def rank(r, wait, work, host_bound=0.1, node=None, clock=1.0, reasons=(), health=True, wall=10.0):
    """A Rank record as load.extract makes it, with a GPU timeline."""
    idle = dict.fromkeys(load.IDLE_CAUSES, 0.0)
    idle["host_bound"] = host_bound
    return {"rank": r, "host": node or "node%d" % (r // 4), "file": "r%d.json" % r, "wall_s": wall, "lost_s": 1.0,
            "categories": dict.fromkeys(load.CATEGORIES, 0.1), "collectives": None,
            "gpu": {"wall_s": wall, "busy_s": wait + work, "idle_s": wall - wait - work,
                    "busy": {"compute": work, "communication": wait, "copies": 0.0, "memsets": 0.0}, "idle": idle},
            "health": [{"device": 0, "name": "x", "throttled_samples": 5 if reasons else 0, "samples": 10,
                        "clock_ratio_mean": clock, "throttle_reasons": list(reasons), "temperature_c_max": 80.0,
                        "power_w_mean": 0.0}] if health else None,
            "health_missing": "" if health else "absent (a summary from before device health)"}


class Stats(unittest.TestCase):
    def test_percentiles_are_values_of_real_ranks(self):
        v = [5.0, 1.0, 3.0, 2.0, 4.0]
        self.assertEqual(stats.percentile(sorted(v), 50), 3.0)
        self.assertEqual(stats.percentile(sorted(v), 0), 1.0)
        self.assertEqual(stats.percentile(sorted(v), 100), 5.0)
        self.assertIn(stats.percentile(sorted([1.0, 2.0]), 50), (1.0, 2.0))
        self.assertEqual(stats.percentile([], 50), 0.0)

    def test_distribution_names_the_worst_ranks(self):
        d = stats.distribution([(0, 1.0), (1, 9.0), (2, 3.0), (3, 9.0)], worst=2)
        self.assertEqual((d["n"], d["min"], d["max"], d["sum"]), (4, 1.0, 9.0, 22.0))
        self.assertEqual([w["rank"] for w in d["worst"]], [1, 3])   # ties: lower rank first
        low = stats.distribution([(0, 1.0), (1, 9.0), (2, 3.0)], worst=1, largest_is_worst=False)
        self.assertEqual(low["worst"], [{"rank": 0, "value": 1.0}])
        self.assertEqual(stats.distribution([])["n"], 0)

    def test_mad_ignores_one_outlier(self):
        self.assertEqual(stats.mad([1.0, 1.0, 1.0, 1.0, 100.0]), 0.0)

    def test_bins_cover_every_item_once(self):
        for n, k in ((4096, 48), (10, 48), (7, 3), (1, 1)):
            b = stats.bins(n, k)
            self.assertLessEqual(len(b), k)
            self.assertEqual([i for a, e in b for i in range(a, e)], list(range(n)))


class Stragglers(unittest.TestCase):
    def test_the_rank_that_waits_least_is_the_straggler_and_its_cost_is_the_others_extra_wait(self):
        ranks = [rank(r, wait=2.0, work=5.0) for r in range(8)]
        ranks[3] = rank(3, wait=0.5, work=6.5)
        s = stragglers.find(ranks)
        self.assertEqual([x["rank"] for x in s["stragglers"]], [3])
        self.assertAlmostEqual(s["stragglers"][0]["behind_s"], 1.5)
        self.assertAlmostEqual(s["cost_s"], 7 * 1.5)        # 7 others each waited 1.5 s more than rank 3
        self.assertAlmostEqual(s["cost_share"], 1.5 / 10.0)
        self.assertEqual(s["least_wait"][0]["rank"], 3)
        self.assertEqual(s["most_work"][0]["rank"], 3)
        self.assertEqual(s["nodes"], [{"node": "node0", "straggler_ranks": [3], "ranks": 4}])
        self.assertEqual(s["basis"], "gpu_timeline")

    def test_each_straggler_gets_what_the_others_waited_for_it(self):
        ranks = [rank(r, wait=2.0, work=5.0) for r in range(8)]
        ranks[3] = rank(3, wait=0.5, work=6.5)     # arrives last: everyone waits for it
        ranks[5] = rank(5, wait=1.5, work=5.5)     # arrives before rank 3, after the rest
        s = stragglers.find(ranks)
        by = {x["rank"]: x for x in s["stragglers"]}
        self.assertAlmostEqual(by[3]["others_wait_s"], 6 * 1.5 + 1.0)   # six at 2.0 s, rank 5 at 1.5 s
        self.assertAlmostEqual(by[5]["others_wait_s"], 6 * 0.5)         # rank 3 waited less than rank 5
        self.assertEqual((by[3]["cause_ids"], by[5]["cause_ids"]), (["more_work"], ["more_work"]))
        self.assertAlmostEqual(s["cost_s"], by[5]["others_wait_s"])     # the job's: beyond both

    def test_noise_alone_names_no_straggler(self):
        ranks = [rank(r, wait=2.0 + 0.02 * (r % 3), work=5.0) for r in range(16)]
        s = stragglers.find(ranks)
        self.assertEqual(s["stragglers"], [])
        self.assertEqual(s["cost_s"], 0.0)

    def test_two_ranks_have_no_majority(self):
        self.assertEqual(stragglers.find([rank(0, 2.0, 5.0), rank(1, 0.1, 7.0)])["stragglers"], [])

    def test_a_throttled_gpu_is_tied_to_its_straggler(self):
        ranks = [rank(r, wait=2.0, work=5.0) for r in range(8)]
        ranks[5] = rank(5, wait=1.0, work=6.0, clock=0.85, reasons=["sw_thermal", "gpu_idle"][:1])
        ranks[6] = rank(6, wait=2.0, work=5.0, clock=0.8, reasons=["hw_slowdown"])  # keeps pace: not a straggler
        ranks[7] = rank(7, wait=2.0, work=5.0, clock=0.6)     # clocked down while idle, no reason: not throttled
        s = stragglers.find(ranks)
        self.assertEqual([x["rank"] for x in s["stragglers"]], [5])
        self.assertTrue(s["stragglers"][0]["throttled"])
        self.assertIn("GPU throttled", s["stragglers"][0]["causes"][0])
        self.assertEqual(s["stragglers"][0]["cause_ids"], ["throttled"])
        self.assertEqual({t["rank"]: t["straggler"] for t in s["throttled"]}, {5: True, 6: False})

    def test_idle_and_application_clocks_are_not_throttling(self):
        r = rank(0, 1.0, 1.0, clock=0.99)
        r["health"][0]["throttle_reasons"] = []   # load.py drops gpu_idle and applications_clocks
        r["health"][0]["throttled_samples"] = 3
        self.assertEqual(stragglers.throttled(r), [])

    def test_a_slow_host_is_named_as_the_cause(self):
        ranks = [rank(r, wait=2.0, work=5.0) for r in range(8)]
        ranks[2] = rank(2, wait=0.8, work=5.0, host_bound=1.3)
        s = stragglers.find(ranks)
        self.assertEqual([x["rank"] for x in s["stragglers"]], [2])
        self.assertIn("host-bound", " ".join(s["stragglers"][0]["causes"]))
        self.assertEqual(s["stragglers"][0]["cause_ids"], ["host_bound"])
        self.assertAlmostEqual(s["stragglers"][0]["extra_host_bound_s"], 1.2)
        self.assertEqual(s["throttled"], [])

    def test_without_device_health_the_cause_says_so(self):
        ranks = [rank(r, wait=2.0, work=5.0, health=False) for r in range(8)]
        ranks[4] = rank(4, wait=0.5, work=6.5, health=False)
        s = stragglers.find(ranks)
        self.assertIn("device health not measured", s["stragglers"][0]["causes"][0])
        self.assertEqual(s["stragglers"][0]["cause_ids"], ["health_missing"])
        self.assertEqual(s["health_missing_ranks"], 8)

    def test_without_a_gpu_timeline_host_collective_time_is_the_basis(self):
        ranks = [rank(r, 2.0, 5.0) for r in range(6)]
        for r in ranks:
            r["gpu"] = None
            r["categories"]["collective"] = 2.0
        ranks[1]["categories"]["collective"] = 0.2
        s = stragglers.find(ranks)
        self.assertEqual(s["basis"], "host_collective_time")
        self.assertEqual([x["rank"] for x in s["stragglers"]], [1])


if __name__ == "__main__":
    unittest.main()
