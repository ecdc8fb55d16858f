"""docs/deploy.md's Kubernetes manifests, checked without a cluster.

  - every ```yaml block of the page validates against the Kubernetes API's
    JSON schema (version KUBERNETES) in strict mode, unknown fields being
    errors, with PyPI's kubernetes-validate (its schemas ship in the
    package; scripts/deps.sh installs it into the deps cache): the pod
    (block k8s-pod) and the DaemonSet (k8s-daemonset) among them;
  - the same check fails on the pod with one field misspelt, naming it;
  - the DaemonSet's node_exporter arguments, run on Debian's node_exporter
    (scripts/deps.sh) with the container's textfile mount path replaced by
    a folder where gpuslack wrote its metrics (prometheus_dir, under the
    demo on the simulated device), serve gpuslack's metrics and no other
    collector's, on the container port the manifest names.

Environment (set by ctest): KUBERNETES_VALIDATE_DIR (the venv), GPUSLACK_SO,
TRAIN_LOOP, SIMCUDA_DIR.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doc_blocks  # noqa: E402

KUBERNETES = "1.37.0"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


def venv(tool):
    return os.path.join(os.environ["KUBERNETES_VALIDATE_DIR"], "bin", tool)


def validate(texts):
    """kubernetes-validate --strict on each text (one file each): its
    CompletedProcess."""
    with tempfile.TemporaryDirectory() as d:
        files = []
        for i, text in enumerate(texts):
            files.append(os.path.join(d, "block%d.yaml" % i))
            with open(files[-1], "w") as f:
                f.write(text)
        return subprocess.run([venv("kubernetes-validate"), "--strict", "-k", KUBERNETES] + files,
                              capture_output=True, text=True, timeout=120)


def load_yaml(text):
    """The documents of a YAML text, parsed by the venv's PyYAML."""
    r = subprocess.run([venv("python"), "-c", "import json, sys, yaml; "
                        "print(json.dumps(list(yaml.safe_load_all(sys.stdin))))"],
                       input=text, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("YAML does not parse: " + r.stderr)
    return json.loads(r.stdout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Kubernetes(unittest.TestCase):
    def test_every_yaml_block_validates_against_the_api_schema(self):
        blocks = doc_blocks.blocks("yaml")
        kinds = sorted(d["kind"] for _, text in blocks for d in load_yaml(text))
        self.assertEqual(kinds, ["DaemonSet", "Pod"], "docs/deploy.md's yaml blocks")
        for name in ("k8s-pod", "k8s-daemonset"):
            self.assertIn(doc_blocks.block(name), [text for _, text in blocks])
        r = validate([text for _, text in blocks])
        self.assertEqual(r.returncode, 0, "docs/deploy.md's yaml blocks at lines %s:\n%s%s"
                         % ([line for line, _ in blocks], r.stdout, r.stderr))
        validated = re.findall(r"^INFO .* passed for resource .* against version %s$" % KUBERNETES.rsplit(".", 1)[0],
                               r.stdout, re.M)
        self.assertEqual(len(validated), 2, r.stdout)

    def test_a_misspelt_field_fails_the_schema(self):
        pod = doc_blocks.block("k8s-pod")
        broken = pod.replace("readOnly: true", "readonly: true", 1)
        self.assertNotEqual(broken, pod)
        r = validate([broken])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("'readonly' was unexpected", r.stdout + r.stderr)

    def test_the_daemonsets_node_exporter_arguments_serve_gpuslacks_metrics(self):
        (ds,) = load_yaml(doc_blocks.block("k8s-daemonset"))
        (container,) = ds["spec"]["template"]["spec"]["containers"]
        (mount,) = container["volumeMounts"]
        (port,) = container["ports"]
        args = container["args"]
        listen = [a for a in args if a.startswith("--web.listen-address=")]
        self.assertEqual(listen, ["--web.listen-address=:%d" % port["containerPort"]], args)
        self.assertEqual(ds["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"],
                         str(port["containerPort"]))
        with tempfile.TemporaryDirectory() as d:
            textfile = os.path.join(d, "textfile")
            env = dict(os.environ, LD_PRELOAD=os.environ["GPUSLACK_SO"], LD_LIBRARY_PATH=os.environ["SIMCUDA_DIR"],
                       GPUSLACK_CONF="output_dir:%s,prometheus_dir:%s,text_summary:off" % (os.path.join(d, "out"),
                                                                                           textfile),
                       GPUSLACK_JOB_ID="k8s", RANK="0", WORLD_SIZE="1")
            r = subprocess.run([os.environ["TRAIN_LOOP"], "--steps", "2", "--hidden", "64", "--batch", "2"], env=env,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            self.assertEqual(os.listdir(textfile), ["gpuslack-k8s-rank0.prom"])

            local = free_port()
            run = [NODE_EXPORTER] + [a.replace(mount["mountPath"], textfile) for a in args if a not in listen]
            run.append("--web.listen-address=127.0.0.1:%d" % local)
            with open(os.path.join(d, "node_exporter.log"), "w") as log:
                p = subprocess.Popen(run, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            try:
                metrics, deadline = None, time.monotonic() + 60
                while metrics is None and time.monotonic() < deadline and p.poll() is None:
                    try:
                        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % local, timeout=10) as f:
                            metrics = f.read().decode()
                    except OSError:
                        time.sleep(0.3)
            finally:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=20)
            with open(os.path.join(d, "node_exporter.log")) as f:
                log_text = f.read()
        self.assertIsNotNone(metrics, "node_exporter %s served nothing within 60 s (exit %s):\n%s"
                             % (run, p.returncode, log_text[-3000:]))
        self.assertRegex(metrics, r'(?m)^gpuslack_wall_seconds_total\{[^}]*job_id="k8s"[^}]*\} ', metrics[-3000:])
        self.assertRegex(metrics, r"(?m)^node_textfile_scrape_error 0$")
        self.assertNotIn("node_cpu_seconds_total", metrics)  # --collector.disable-defaults: the textfile alone


if __name__ == "__main__":
    for name in ("KUBERNETES_VALIDATE_DIR", "GPUSLACK_SO", "TRAIN_LOOP", "SIMCUDA_DIR"):
        if not os.environ.get(name) or not os.path.exists(os.environ[name]):
            sys.exit("kubernetes_test.py: %s=%r is not there (ctest sets it; scripts/deps.sh installs "
                     "kubernetes-validate)" % (name, os.environ.get(name)))
    if not os.path.exists(NODE_EXPORTER):
        sys.exit("kubernetes_test.py: no %s: run scripts/deps.sh (prometheus-node-exporter)" % NODE_EXPORTER)
    unittest.main()
