"""The job report's HTML in real headless Chromium (Debian's chromium,
scripts/deps.sh): the file opens offline (a proxy that refuses everything
stands in for no network) with no console message, the key figures are in
the rendered page, and a screenshot is written as a test artifact
(ARTIFACT_DIR, in the build tree) and checked not blank.

Each check is also shown able to fail: a page with a console error is
caught, and a blank page's screenshot is refused."""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import merge_test  # noqa: E402
import png  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "chromium")
ARTIFACTS = os.environ.get("ARTIFACT_DIR") or tempfile.gettempdir()
SHOT_W, SHOT_H = 1280, 2000


def chromium(tmp, url, *args):
    """Runs headless Chromium offline on url; (stdout, console lines)."""
    cmd = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
           "--user-data-dir=" + os.path.join(tmp, "profile"), "--no-first-run", "--proxy-server=127.0.0.1:9",
           "--enable-logging=stderr", "--v=0"] + list(args) + [url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, errors="replace")
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    return p.stdout, console, p


def non_blank_share(path):
    w, h, rows, bpp = png.decode(path)
    return w, h, png.distinct_colour_rows(rows, bpp) / float(h)


class Html(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpuslack-html-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def report(self):
        ranks = os.path.join(self.tmp, "ranks")
        job = merge_test.make_rank_folder(ranks)
        p = merge_test.merge(ranks, "--out", self.tmp)
        self.assertEqual(p.returncode, 1, p.stderr)
        with open(os.path.join(self.tmp, "job-report.json")) as f:
            return "file://" + os.path.join(self.tmp, "job-report.html"), job, json.load(f)

    def test_the_report_opens_offline_with_no_console_message_and_shows_the_key_figures(self):
        url, job, rep = self.report()
        dom, console, p = chromium(self.tmp, url, "--dump-dom")
        self.assertEqual(console, [], p.stderr[-2000:])
        self.assertTrue("gpuslack job report: job 4242" in dom, "gpuslack job report: job 4242")
        strag = re.search(r'<section id="stragglers">(.*?)</section>', dom, re.S)
        self.assertIsNotNone(strag, "no stragglers section")
        cells = re.findall(r"<tr><td>(\d+)</td><td>(node\d+)</td>", strag.group(1))
        self.assertIn((str(job["slow"]), "node000"), cells)
        self.assertIn((str(job["throttled"]), "node001"), cells)
        self.assertIn("GPU throttled", strag.group(1))
        self.assertIn("Throttled GPUs", strag.group(1))
        self.assertEqual(dom.count("<svg"), 5, "two stacked bars, heatmap, memory, busbw")
        # The chart's figures are the text's (fmt.gbps): "0.30", not "%.2g"'s "0.3".
        self.assertTrue("expected 0.30 GB/s" in dom, "expected 0.30 GB/s")
        self.assertTrue("NCCL_ALGO" in dom, "NCCL_ALGO")
        found = re.search(r'<section id="findings">(.*?)</section>', dom, re.S)
        self.assertIsNotNone(found, "no findings section")
        self.assertLess(dom.index('id="findings"'), dom.index('id="stragglers"'))
        self.assertIn("Rank %d on node000 holds the other ranks back" % job["slow"], found.group(1))
        self.assertIn("nccl_env_mismatch", found.group(1))
        self.assertTrue("has schema_version 2; this gpuslack reads version 1" in dom, "the skipped future-schema file")
        # The top kernels across ranks (issue 29), one row each, as rendered.
        kernels = re.search(r'<section id="kernels">(.*?)</section>', dom, re.S)
        self.assertIsNotNone(kernels, "no kernels section")
        self.assertIn("Top kernels across ranks", kernels.group(1))
        names = [k["name"] for k in rep["kernels"]]
        self.assertTrue(names, "the fixtures' ranks have top kernels")
        self.assertEqual(len(names), kernels.group(1).count("<tr><td"))
        for n in names:
            self.assertIn(html.escape(n, quote=False), kernels.group(1))

    def test_a_console_error_is_caught(self):
        bad = os.path.join(self.tmp, "bad.html")
        with open(bad, "w") as f:
            f.write('<!DOCTYPE html><html><body><script>console.error("gpuslack-test")</script></body></html>')
        _, console, p = chromium(self.tmp, "file://" + bad, "--dump-dom")
        self.assertTrue(any("gpuslack-test" in l for l in console), p.stderr[-2000:])

    def test_the_screenshot_is_written_and_not_blank(self):
        url, _, _ = self.report()
        os.makedirs(ARTIFACTS, exist_ok=True)
        shot = os.path.join(ARTIFACTS, "job-report.png")
        if os.path.exists(shot):
            os.unlink(shot)
        _, console, p = chromium(self.tmp, url, "--screenshot=" + shot, "--window-size=%d,%d" % (SHOT_W, SHOT_H))
        self.assertTrue(os.path.exists(shot), p.stderr[-2000:])
        w, h, share = non_blank_share(shot)
        self.assertEqual((w, h), (SHOT_W, SHOT_H))
        self.assertGreater(share, 0.5, "only %.0f%% of the rows hold more than one colour" % (100 * share))
        print("screenshot %s: %.0f%% of rows not blank" % (shot, 100 * share))
        # A blank page fails the same check.
        blank = os.path.join(self.tmp, "blank.html")
        with open(blank, "w") as f:
            f.write("<!DOCTYPE html><html><body></body></html>")
        blank_shot = os.path.join(self.tmp, "blank.png")
        chromium(self.tmp, "file://" + blank, "--screenshot=" + blank_shot, "--window-size=320,200")
        self.assertLess(non_blank_share(blank_shot)[2], 0.5)


if __name__ == "__main__":
    unittest.main()
