"""The job report's findings (python_shim/gpuslack/job/findings.py,
job_rules.py): each rank's findings merged by rule (how many ranks, the
total cost, the worst rank's evidence and fix, ranked by cost; summaries
from before findings merge as none), and the job-level rules, each firing
and with its near miss: NCCL settings that differ between ranks (the same
settings everywhere, logging settings, and per-node hardware names must not
fire) and stragglers (ranks within noise must not). The text, HTML and JSON
(validated against docs/job_report.schema.json) show them.

Rank files come from the generator (gpuslack.job.synth) made from the real
demo summaries in tests/job/fixtures, merged in this process."""
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import merge_test  # noqa: E402  (FIXTURES, validate; puts python_shim on the path)
from stats_test import rank as hand_rank  # noqa: E402
from gpuslack.job import aggregate, fmt, html, job_rules, merge, stragglers, synth, text  # noqa: E402

SAME_ENV = {"NCCL_ALGO": "Ring", "NCCL_IB_HCA": "mlx5"}


def templates():
    return [merge_test.read_json(f) for f in merge_test.FIXTURES]


def site(r):
    return [["train.py:%d (step)" % (40 + r), "libtorch_cuda.so+0x1c75727 (at::native::copy_)"]]


def two_rules(rank, wall):
    """allocator_sync on every rank, costing more on higher ranks;
    pageable_copies on ranks 2 and 5 only, costing more in total."""
    out = [synth.finding("allocator_sync", 0.1 * (rank + 1), title="cudaFree synchronizes on rank %d" % rank,
                         gpu_idle_s=0.05, evidence=[("cudaFree calls that synchronized", str(10 * rank))],
                         where=site(rank), fix="allocator:vmm (rank %d)" % rank)]
    if rank in (2, 5):
        out.append(synth.finding("pageable_copies", {2: 3.0, 5: 4.0}[rank], title="pageable copies on rank %d" % rank,
                                 evidence=[("pageable bytes", "%d GiB" % rank)], fix="pin_memory=True"))
    return out


def flat_text(rep):
    """The text report as one line of single-spaced words, without prefixes."""
    return " ".join(" ".join(l[len("gpuslack job: "):] for l in text.render(rep).splitlines()).split())


class Job(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpuslack-findings-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def report(self, n=8, skipped_ranks=(), **kw):
        kw.setdefault("nccl_env", lambda r: dict(SAME_ENV))
        folder = os.path.join(self.tmp, "ranks")
        shutil.rmtree(folder, ignore_errors=True)
        synth.generate(templates(), folder, n, seed=11, ranks_per_node=4, **kw)
        rep, skipped = merge.report([folder])
        self.skipped = skipped
        self.assertEqual(sorted(os.path.basename(f) for f, _ in skipped),
                         ["gpuslack-4242-rank%d.json" % r for r in skipped_ranks])
        self.assertEqual(merge_test.validate(json.loads(json.dumps(rep))), [])
        return rep

    def by_rule(self, rep, rule):
        return [f for f in rep["findings"] if f["rule"] == rule]


class MergedFindings(Job):
    def test_each_rule_is_one_entry_with_its_ranks_total_cost_and_worst_rank(self):
        rep = self.report(findings=two_rules)
        self.assertEqual([f["rule"] for f in rep["findings"]], ["pageable_copies", "allocator_sync"])  # by total cost
        pc, al = rep["findings"]
        self.assertEqual((pc["ranks"], pc["rank_list"], pc["worst_rank"], pc["scope"]), (2, [2, 5], 5, "ranks"))
        self.assertAlmostEqual(pc["cost_s_total"], 7.0)
        self.assertEqual((pc["title"], pc["fix"]), ("pageable copies on rank 5", "pin_memory=True"))
        self.assertEqual(pc["evidence"], [{"name": "pageable bytes", "value": "5 GiB"}])
        self.assertIsNone(pc["gpu_idle_s_total"])                     # no rank measured GPU idle for it
        walls = {r["rank"]: r["wall_s"] for r in rep["per_rank"]}
        self.assertAlmostEqual(pc["cost_share_mean"], (3.0 / walls[2] + 4.0 / walls[5]) / 2)
        self.assertAlmostEqual(pc["cost_share_max"], max(3.0 / walls[2], 4.0 / walls[5]))
        self.assertEqual((al["ranks"], al["rank_list"], al["worst_rank"]), (8, list(range(8)), 7))
        self.assertAlmostEqual(al["cost_s_total"], sum(0.1 * (r + 1) for r in range(8)))
        self.assertAlmostEqual(al["gpu_idle_s_total"], 8 * 0.05)
        self.assertEqual((al["fix"], al["where"]), ("allocator:vmm (rank 7)", site(7)))
        self.assertEqual(rep["missing"]["findings"], 0)

    def test_summaries_without_findings_merge_as_none_and_are_counted(self):
        rep = self.report(findings=lambda r, wall: two_rules(r, wall) if r < 4 else None)
        self.assertEqual(rep["missing"]["findings"], 4)
        al, pc = self.by_rule(rep, "allocator_sync")[0], self.by_rule(rep, "pageable_copies")[0]
        self.assertEqual((al["rank_list"], pc["rank_list"]), ([0, 1, 2, 3], [2]))
        self.assertIn("findings (2, most costly first) (4 of 8 ranks' summaries predate findings):", text.render(rep))
        rep = self.report(findings=lambda r, wall: None)
        self.assertEqual((rep["findings"], rep["missing"]["findings"]), ([], 8))
        self.assertIn("gpuslack job: findings: none (8 of 8 ranks' summaries predate findings)\n", text.render(rep))
        rep = self.report(findings=lambda r, wall: [])                       # evaluated, nothing fired
        self.assertEqual((rep["findings"], rep["missing"]["findings"]), ([], 0))
        self.assertIn("gpuslack job: findings: none\n", text.render(rep))

    def test_malformed_findings_entries_skip_the_file_as_report_does(self):
        # The library's reader refuses a findings array with malformed
        # entries; so does the merge (one reader for every command), with
        # its line, and the other ranks are merged.
        def bad(r, wall):
            if r != 1:
                return [synth.finding("host_bound", 0.5)]
            return [{"title": "no rule"}, "not an object", {"rule": "sync_copies", "cost_s": "1", "evidence": 3,
                                                            "where": {"a": 1}, "gpu_idle_s": -1, "fix": None},
                    synth.finding("host_bound", 0.5)]
        rep = self.report(n=3, findings=bad, skipped_ranks=[1])
        self.assertIn("gpuslack-4242-rank1.json is not a valid gpuslack summary: findings[", self.skipped[0][1])
        self.assertEqual(rep["ranks"], 2)
        self.assertEqual([(f["rule"], f["ranks"]) for f in rep["findings"]], [("host_bound", 2)])


def algorithm(lines_of):
    """collective_algorithm on the ranks lines_of(rank) gives lines for
    (None: the rule did not fire there)."""
    def findings(rank, wall):
        lines = lines_of(rank)
        if lines is None:
            return []
        return [synth.finding("collective_algorithm", 2.0 + 0.1 * rank, title="all-reduce would finish 2.9x sooner",
                              evidence=[("NCCL chose", "Ring/Simple"), ("environment", lines)],
                              fix="Set on every rank alike (NCCL needs every rank to make the same choice): " + lines)]
    return findings


class AlgorithmFixAcrossRanks(Job):
    def test_the_same_fix_on_every_rank_is_said(self):
        rep = self.report(findings=algorithm(lambda r: "NCCL_ALGO=Tree"))
        [f] = self.by_rule(rep, "collective_algorithm")
        self.assertEqual(f["fix_check"], {"same": True, "fix": "NCCL_ALGO=Tree", "differing": []})
        self.assertIn("The fix is the same on every rank (8)", f["fix"])
        self.assertIn("The fix is the same on every rank (8)", text.render(rep))

    def test_ranks_that_differ_or_lack_the_fix_are_listed(self):
        def lines(r):
            return {3: "NCCL_ALGO=Tree NCCL_PROTO=LL128", 5: None}.get(r, "NCCL_ALGO=Tree")
        rep = self.report(findings=algorithm(lines))
        [f] = self.by_rule(rep, "collective_algorithm")
        check = f["fix_check"]
        self.assertFalse(check["same"])
        self.assertEqual(check["fix"], "NCCL_ALGO=Tree")
        self.assertEqual(check["differing"], [{"rank": 3, "fix": "NCCL_ALGO=Tree NCCL_PROTO=LL128"},
                                              {"rank": 5, "fix": ""}])
        self.assertIn("rank 3: NCCL_ALGO=Tree NCCL_PROTO=LL128, rank 5: none", f["fix"])
        self.assertIn("NCCL needs every rank to make the same choice", f["fix"])

    def test_other_rules_carry_no_check(self):
        rep = self.report(findings=two_rules)
        self.assertTrue(all("fix_check" not in f for f in rep["findings"]))


class NcclEnvMismatch(Job):
    def test_a_variable_that_differs_names_the_ranks_holding_each_value(self):
        def env(r):
            e = dict(SAME_ENV, NCCL_ALGO="Tree" if r in (6, 7) else "Ring")
            if r == 0:
                e["NCCL_PROTO"] = "Simple"
            return e
        rep = self.report(nccl_env=env, findings=two_rules)
        [f] = self.by_rule(rep, "nccl_env_mismatch")
        self.assertEqual((f["scope"], f["cost_measured"], f["cost_s_total"]), ("job", False, 0.0))
        self.assertEqual((f["rank_list"], f["worst_rank"]), ([0, 6, 7], 0))      # not the most common value
        ev = {e["name"]: e["value"] for e in f["evidence"]}
        self.assertEqual(ev, {"NCCL_ALGO": "Ring on 6 ranks (0, 1, 2, 3, 4, 5); Tree on 2 ranks (6, 7)",
                              "NCCL_PROTO": "(unset) on 7 ranks (1, 2, 3, 4, 5, 6 and 1 more); Simple on 1 rank (0)"})
        self.assertIn("NCCL_ALGO and NCCL_PROTO the same on every rank", f["fix"])
        self.assertEqual(rep["findings"][-1]["rule"], "nccl_env_mismatch")    # unmeasured: after the measured ones

    def test_the_same_settings_everywhere_give_no_finding(self):
        self.assertEqual(self.by_rule(self.report(), "nccl_env_mismatch"), [])

    def test_logging_settings_and_per_node_hardware_names_give_no_finding(self):
        def env(r):
            e = dict(SAME_ENV, NCCL_IB_HCA="mlx5_%d" % (r // 4), NCCL_SOCKET_IFNAME="eth%d" % (r // 4))
            if r == 3:
                e["NCCL_DEBUG"] = "INFO"
            return e
        rep = self.report(nccl_env=env)
        self.assertEqual(self.by_rule(rep, "nccl_env_mismatch"), [])
        self.assertEqual(sorted(d["name"] for d in rep["nccl_env_differences"]),
                         ["NCCL_DEBUG", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"])     # still in the data
        # A hardware name that differs inside a node is a mismatch.
        rep = self.report(nccl_env=lambda r: dict(SAME_ENV, NCCL_IB_HCA="mlx5_1" if r == 2 else "mlx5_0"))
        [f] = self.by_rule(rep, "nccl_env_mismatch")
        self.assertEqual((f["rank_list"], f["evidence"][0]["name"]), ([2], "NCCL_IB_HCA"))


class Straggler(Job):
    def test_each_straggler_is_a_finding_with_its_cause_cost_and_fix(self):
        rep = self.report(slow=[3], throttled=[5])
        found = {f["worst_rank"]: f for f in self.by_rule(rep, "straggler")}
        self.assertEqual(sorted(found), [3, 5])
        slow, hot = found[3], found[5]
        self.assertIn("its host is slow", slow["title"])
        self.assertIn("input pipeline", slow["fix"])
        self.assertIn("host-bound GPU idle", [e["name"] for e in slow["evidence"]])
        self.assertIn("its GPU throttles", hot["title"])
        self.assertIn("cooling", hot["fix"])
        self.assertIn("sw_thermal", {e["name"]: e["value"] for e in hot["evidence"]}["SM clock"])
        # Cost: every other rank's collective wait beyond the straggler's own.
        wait = {r["rank"]: r["collective_wait_s"] for r in rep["per_rank"]}
        for k, f in found.items():
            expect = sum(max(0.0, w - wait[k]) for o, w in wait.items() if o != k)
            self.assertAlmostEqual(f["cost_s_total"], expect)
            others_wall = sum(r["wall_s"] for r in rep["per_rank"] if r["rank"] != k)
            self.assertAlmostEqual(f["cost_share_max"], expect / others_wall)
            self.assertEqual((f["ranks"], f["rank_list"], f["scope"]), (1, [k], "job"))
        self.assertGreater(slow["cost_s_total"], hot["cost_s_total"])   # rank 3 arrives last
        self.assertEqual([f["worst_rank"] for f in self.by_rule(rep, "straggler")], [3, 5])   # ranked by cost

    def test_ranks_within_noise_give_no_straggler_finding(self):
        rep = self.report()
        self.assertEqual(rep["stragglers"]["stragglers"], [])
        self.assertEqual(self.by_rule(rep, "straggler"), [])

    def test_a_straggler_with_a_healthy_gpu_and_host_has_more_work_and_without_health_says_so(self):
        ranks = [hand_rank(r, wait=2.0, work=5.0) for r in range(8)]
        ranks[3] = hand_rank(3, wait=0.5, work=6.5)
        ranks[6] = hand_rank(6, wait=0.6, work=6.4, health=False)
        [a, b] = job_rules.straggler(stragglers.find(ranks), ranks)
        self.assertEqual((a["worst_rank"], b["worst_rank"]), (3, 6))
        self.assertIn("it does more work", a["title"])
        self.assertIn("same work", a["fix"])
        self.assertIn("cause unknown", b["title"])
        self.assertIn("device_health", b["fix"])
        self.assertAlmostEqual(a["cost_s_total"], 6 * 1.5 + (0.6 - 0.5))


class Output(Job):
    def test_text_html_and_json_show_the_findings_after_the_headline(self):
        rep = self.report(slow=[3], findings=two_rules,
                          nccl_env=lambda r: dict(SAME_ENV, NCCL_ALGO="Tree" if r == 7 else "Ring"))
        lines = text.render(rep).splitlines()
        first = next(i for i, l in enumerate(lines) if l.startswith("gpuslack job: findings (4, most costly first"))
        self.assertEqual(first, 2, lines[:4])                       # after the job line and the time lost
        table = next(i for i, l in enumerate(lines) if "host blocked in CUDA calls" in l)
        numbered = [l for l in lines[first:table] if re.match(r"gpuslack job:   \d+\. ", l)]
        self.assertEqual(len(numbered), 4)
        self.assertIn("[pageable_copies]", numbered[0])
        self.assertIn("[nccl_env_mismatch]", numbered[-1])
        block = "\n".join(lines[first:table])
        for want in ("on 2 of 8 ranks (2, 5); cost 7.00 s summed", "on rank 5, where it cost most:",
                     "evidence: pageable bytes 5 GiB", "fix: pin_memory=True", "where: train.py:47 (step)",
                     "Rank 3 on node000 holds the other ranks back", "cost not measured"):
            self.assertIn(want, block)
        for l in lines[first:table]:
            self.assertLessEqual(len(l), len("gpuslack job: ") + 78, l)
        self.assertFalse(any(l.startswith("gpuslack job: NCCL setting differs") for l in lines))  # folded in
        page = html.render(rep)
        self.assertLess(page.index('<section id="findings">'), page.index('<section id="stragglers">'))
        section = page[page.index('<section id="findings">'):page.index('<section id="stragglers">')]
        self.assertEqual(section.count('<div class="finding'), 4)
        for want in ("pageable copies on rank 5", "pin_memory=True", "train.py:47 (step)", "NCCL_ALGO", "Fix:"):
            self.assertIn(want, section)

    def test_text_and_html_give_each_finding_the_same_cost_line(self):
        # One function (fmt.finding_cost) writes it for both: a second copy
        # in either reads otherwise here.
        rep = self.report(slow=[3], findings=two_rules,
                          nccl_env=lambda r: dict(SAME_ENV, NCCL_ALGO="Tree" if r == 7 else "Ring"))
        flat = " ".join(" ".join(l[len("gpuslack job: "):] for l in text.render(rep).splitlines()).split())
        page = html.render(rep)
        section = page[page.index('<section id="findings">'):page.index('<section id="stragglers">')]
        costs = re.findall(r'<div class="finding[^"]*"><h3>.*?</h3><p>(.*?)</p>', section)
        self.assertEqual(len(costs), 4)
        self.assertIn("<b>7.00 s</b>", section)
        for c in costs:
            line = re.sub(r"</?b>", "", c)
            self.assertTrue(line.endswith("."), c)
            line = line[0].lower() + line[1:-1]
            self.assertIn(line, flat)

    def test_the_findings_explain_a_share_of_the_gpu_idle_summed_over_ranks(self):
        # Note [Each idle second charged once] (lib/findings/idle_ledger.h):
        # a rank's findings partition its GPU idle. Rank 0's findings charge
        # the same gaps twice, each more than its idle; the generator writes
        # its "findings_explain" as the library would, at most its idle.
        def rules(rank, wall):
            if rank == 0:
                return [synth.finding("sync_copies", 1e4, gpu_idle_s=1e4),
                        synth.finding("host_bound", 1e4, gpu_idle_s=1e4)]
            return [synth.finding("host_bound", 0.01, gpu_idle_s=0.01), synth.finding("pageable_copies", 5.0)]
        rep = self.report(findings=rules)
        e = rep["findings_explain"]
        idle = {r["rank"]: r["gpu_idle_s"] for r in rep["per_rank"]}
        self.assertTrue(all(v > 0.01 for v in idle.values()), idle)
        self.assertEqual(e["ranks"], 8)
        self.assertAlmostEqual(e["gpu_idle_s"], sum(idle.values()))
        self.assertAlmostEqual(e["explained_s"], idle[0] + 7 * 0.01)  # host time (pageable_copies) is no GPU idle
        self.assertAlmostEqual(e["explained_share"], e["explained_s"] / e["gpu_idle_s"])
        self.assertLessEqual(e["explained_share"], 1.0)
        lines = text.render(rep).splitlines()
        first = next(i for i, l in enumerate(lines) if l.startswith("gpuslack job: findings ("))
        want = "gpuslack job:   they explain %s of the GPU's %s idle on 8 ranks (" % (
            fmt.seconds(e["explained_s"]), fmt.seconds(e["gpu_idle_s"]))
        self.assertTrue(lines[first + 1].startswith(want), lines[first + 1])
        page = html.render(rep)
        self.assertIn("They explain <b>%s</b> of the GPU's %s idle on 8 ranks (%s)." % (
            fmt.seconds(e["explained_s"]), fmt.seconds(e["gpu_idle_s"]), fmt.share(e["explained_share"])), page)

    def test_the_job_figure_is_the_sum_of_the_ranks_own_figures(self):
        # Each rank's summary says how much of its idle its findings explain
        # (lib/report/idle_explained.h writes "findings_explain"); the job
        # report sums those and derives nothing from the findings or the
        # timeline: here both say otherwise (host_bound 0.01 s of GPU idle,
        # the timeline's idle), and the figures are the fields' alone.
        def rules(rank, wall):
            return [synth.finding("host_bound", 0.01, gpu_idle_s=0.01), synth.finding("sync_copies", 0.02, gpu_idle_s=0.02)]
        fields = {r: {"gpu_idle_s": 10.0 + r, "explained_s": 0.5 * (r + 1)} for r in range(8)}
        rep = self.report(findings=rules, findings_explain=lambda r, idle: fields[r])
        e = rep["findings_explain"]
        timeline_idle = sum(r["gpu_idle_s"] for r in rep["per_rank"])
        self.assertEqual((e["ranks"], e["unknown_ranks"]), (8, 0))
        self.assertAlmostEqual(e["gpu_idle_s"], sum(f["gpu_idle_s"] for f in fields.values()))      # 108 s
        self.assertAlmostEqual(e["explained_s"], sum(f["explained_s"] for f in fields.values()))    # 18 s
        self.assertAlmostEqual(e["explained_share"], 18.0 / 108.0)
        self.assertNotAlmostEqual(e["gpu_idle_s"], timeline_idle, places=3)
        self.assertIn("they explain %s of the GPU's %s idle on 8 ranks (%s)" % (
            fmt.seconds(18.0), fmt.seconds(108.0), fmt.share(18.0 / 108.0)), flat_text(rep))

    def test_a_rank_whose_summary_lacks_the_figure_is_unknown(self):
        # Summaries from before "findings_explain": counted as unknown, never
        # re-derived from their findings; the report says so and does not fail.
        def rules(rank, wall):
            return [synth.finding("host_bound", 0.01, gpu_idle_s=0.01)]
        rep = self.report(findings=rules, findings_explain=lambda r, idle: None if r in (1, 2) else
                          {"gpu_idle_s": 2.0, "explained_s": 1.0})
        e = rep["findings_explain"]
        self.assertEqual(e, {"ranks": 6, "unknown_ranks": 2, "gpu_idle_s": 12.0, "explained_s": 6.0,
                             "explained_share": 0.5})
        self.assertIn("they explain %s of the GPU's %s idle on 6 ranks (%s; 2 ranks' summaries predate the figure)"
                      % (fmt.seconds(6.0), fmt.seconds(12.0), fmt.share(0.5)), flat_text(rep))
        self.assertIn("; 2 ranks&#x27; summaries predate the figure).</p>", html.render(rep))
        # Every rank's summary lacks it: unknown, in the JSON, the text and the page.
        rep = self.report(findings=rules, findings_explain=lambda r, idle: None)
        self.assertEqual(rep["findings_explain"], {"ranks": 0, "unknown_ranks": 8, "gpu_idle_s": 0.0,
                                                   "explained_s": 0.0, "explained_share": None})
        self.assertIn("how much of the GPU's idle they explain is unknown: 8 ranks' summaries predate the figure",
                      flat_text(rep))
        self.assertIn("<p>How much of the GPU's idle they explain is unknown: 8 ranks&#x27; summaries predate "
                      "the figure.</p>", html.render(rep))

    def test_ranks_without_a_gpu_timeline_are_left_out(self):
        without = dict(hand_rank(0, 1.0, 2.0), gpu=None, findings=[synth.finding("sync_copies", 1.0, gpu_idle_s=1.0)],
                       findings_explain=None, findings_explain_absent=False)
        self.assertIsNone(aggregate._findings_explain([without]))
        old = dict(without, findings_explain_absent=True)  # from before the member, and no timeline either
        self.assertIsNone(aggregate._findings_explain([old]))
        said = dict(hand_rank(1, 1.0, 2.0), findings=None, findings_explain={"gpu_idle_s": 7.0, "explained_s": 0.0},
                    findings_explain_absent=False)
        self.assertEqual(aggregate._findings_explain([without, old, said]),
                         {"ranks": 1, "unknown_ranks": 0, "gpu_idle_s": 7.0, "explained_s": 0.0,
                          "explained_share": 0.0})

    def test_the_schema_rejects_a_broken_finding(self):
        rep = json.loads(json.dumps(self.report(slow=[3], findings=two_rules)))
        self.assertEqual(merge_test.validate(rep), [])
        for breaks in (lambda f: f.pop("fix"), lambda f: f.update(scope="node"), lambda f: f.update(ranks=0),
                       lambda f: f.update(cost_share_max=1.5), lambda f: f.update(extra=1),
                       lambda f: f["evidence"].append({"name": "x"})):
            broken = json.loads(json.dumps(rep))
            breaks(broken["findings"][0])
            self.assertNotEqual(merge_test.validate(broken), [], breaks)
        broken = json.loads(json.dumps(rep))
        broken.pop("findings")
        self.assertNotEqual(merge_test.validate(broken), [])


if __name__ == "__main__":
    unittest.main()
