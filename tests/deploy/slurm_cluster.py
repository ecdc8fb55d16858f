"""A one-node Slurm cluster on this machine, for a test: Debian's slurm-wlm
(slurmctld, slurmd, munged; scripts/deps.sh installs them), started by hand
as root with no systemd and no cgroups, everything in one temporary folder.

    with Cluster() as c:          # munged, slurmctld, slurmd; waits until the node is idle
        job = c.sbatch([...], env=..., cwd=...)   # the job id (sbatch --parsable)
        state = c.wait(job, timeout)              # COMPLETED, FAILED, ... (bounded)
        c.logs()                                  # the daemons' logs' tails, for a failure message

The folder holds a fresh munge key, the munge socket, slurm.conf and the
daemons' spool, state, pid and log files. slurm.conf: one node named as
`hostname -s` says, at 127.0.0.1, with CPUS (4) whatever the machine has
(SlurmdParameters=config_overrides: 4 tasks run on 2 cores), select/cons_tres
by CPU, proctrack/linuxproc, task/none, no accounting, ports chosen free on
127.0.0.1. The daemons and every job get SLURM_CONF, and a marker variable
naming the folder: stop() ends the daemons it started, then every process
whose environment holds that marker (slurmstepd and tasks a killed slurmd
left behind), and nothing else. stop() runs on every exit of the `with`,
failure or not; each wait is bounded; and should the test's process be
killed, the daemons get SIGTERM (PR_SET_PDEATHSIG).

Needs root (slurmd starts the tasks as the submitting user); CI runs as root.
Standard library only."""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

CPUS = 4
MARKER = "GPUSLACK_SLURM_TEST_CLUSTER"
DAEMONS = ("munged", "slurmctld", "slurmd", "mungekey", "sbatch", "srun", "sinfo", "scontrol", "scancel")
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
                "BOOT_FAIL", "DEADLINE"}


class ClusterError(Exception):
    pass


def die_with_parent():
    """In the child before exec: SIGTERM when the test's process ends, even
    killed (a ctest timeout), so that no daemon outlives it."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, chars=4000):
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError as e:
        return "(%s)" % e
    return text[-chars:]


class Cluster:
    def __init__(self, node_timeout=120):
        self.node_timeout = node_timeout
        self.dir = None
        self.procs = {}
        self.jobs = []

    # --- the environment every Slurm command and daemon runs with ---------
    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "SQUEUE_"))}
        env.update({"SLURM_CONF": self.conf, MARKER: self.dir})
        env.update(extra or {})
        return env

    def command(self, args, timeout=60, **kw):
        """Runs a Slurm client command (bounded); returns its CompletedProcess."""
        try:
            return subprocess.run(args, env=kw.pop("env", None) or self.env(), capture_output=True, text=True,
                                  timeout=timeout, **kw)
        except subprocess.TimeoutExpired:
            raise ClusterError("%s did not answer within %d s\n%s" % (" ".join(args), timeout, self.logs()))

    # --- start -------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        missing = [d for d in DAEMONS if not shutil.which(d, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]
        if missing:
            raise ClusterError("not installed: %s: run scripts/deps.sh (Debian's slurm-wlm and munge)"
                               % ", ".join(missing))
        if os.geteuid() != 0:
            raise ClusterError("the one-node Slurm cluster needs root (slurmd starts tasks as their user); CI runs "
                               "as root")
        self.dir = tempfile.mkdtemp(prefix="gpuslack-slurm-")
        os.chmod(self.dir, 0o711)  # munged wants the socket's folder searchable
        for sub in ("spool", "state"):
            os.mkdir(os.path.join(self.dir, sub))
        self.conf = self.path("slurm.conf")
        self.host = socket.gethostname().split(".")[0]
        sbin = lambda name: shutil.which(name, path="/usr/sbin:/sbin:" + os.environ.get("PATH", ""))
        key = self.path("munge.key")
        r = subprocess.run([sbin("mungekey"), "--create", "--keyfile", key], capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            raise ClusterError("mungekey failed: " + r.stderr)
        self.spawn("munged", [sbin("munged"), "--foreground", "--force", "--key-file=" + key,
                              "--socket=" + self.path("munge.socket"), "--pid-file=" + self.path("munged.pid"),
                              "--log-file=" + self.path("munged.log"), "--seed-file=" + self.path("munged.seed")])
        self.wait_for(lambda: os.path.exists(self.path("munge.socket")), 30, "munged's socket")
        with open(self.path("plugstack.conf"), "w"):
            pass
        ports = set()
        while len(ports) < 2:
            ports.add(free_port())
        with open(self.conf, "w") as f:
            f.write(self.slurm_conf(*sorted(ports)))
        self.spawn("slurmctld", [sbin("slurmctld"), "-D", "-i", "-f", self.conf])
        self.spawn("slurmd", [sbin("slurmd"), "-D", "-f", self.conf, "-N", self.host])
        self.wait_for(self.node_idle, self.node_timeout, "node %s idle (sinfo)" % self.host)

    def slurm_conf(self, ctld_port, slurmd_port):
        p = self.path
        return "\n".join([
            "ClusterName=gpuslacktest",
            "SlurmctldHost=%s(127.0.0.1)" % self.host,
            "SlurmctldPort=%d" % ctld_port,
            "SlurmdPort=%d" % slurmd_port,
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % p("munge.socket"),
            "StateSaveLocation=%s" % p("state"),
            "SlurmdSpoolDir=%s" % p("spool"),
            "SlurmctldPidFile=%s" % p("slurmctld.pid"),
            "SlurmdPidFile=%s" % p("slurmd.pid"),
            "SlurmctldLogFile=%s" % p("slurmctld.log"),
            "SlurmdLogFile=%s" % p("slurmd.log"),
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "PlugStackConfig=%s" % p("plugstack.conf"),
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SlurmdParameters=config_overrides",  # CPUs=4 on a machine with fewer
            "ReturnToService=2",
            "MailProg=/bin/true",
            # A loaded 2-core machine answers slowly: generous, still bounded.
            "MessageTimeout=60",
            "SlurmdTimeout=300",
            "MinJobAge=3600",  # a finished job's record stays for wait() to read
            "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN" % (self.host, CPUS),
            "PartitionName=test Nodes=%s Default=YES MaxTime=30 State=UP" % self.host,
            ""])

    def path(self, name):
        return os.path.join(self.dir, name)

    def spawn(self, name, args):
        out = open(self.path(name + ".out"), "w")
        self.procs[name] = subprocess.Popen(args, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.dir,
                                            preexec_fn=die_with_parent)
        out.close()

    def wait_for(self, ready, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise ClusterError("%s exited (status %s) while waiting for %s\n%s" % (
                    ", ".join(dead), [self.procs[n].returncode for n in dead], what, self.logs()))
            if ready():
                return
            time.sleep(0.5)
        raise ClusterError("no %s within %d s\n%s" % (what, timeout, self.logs()))

    def node_idle(self):
        r = self.command(["sinfo", "--noheader", "--nodes", self.host, "--format", "%T"], timeout=60)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    # --- jobs ---------------------------------------------------------------
    def sbatch(self, args, env, cwd):
        r = self.command(["sbatch", "--parsable"] + args, env=self.env(env), cwd=cwd)
        if r.returncode != 0:
            raise ClusterError("sbatch %s: exit %d: %s\n%s" % (" ".join(args), r.returncode, r.stderr, self.logs()))
        job = r.stdout.strip().split(";")[0]
        self.jobs.append(job)
        return job

    def job_fields(self, job):
        r = self.command(["scontrol", "--oneliner", "show", "job", job])
        return dict(kv.split("=", 1) for kv in r.stdout.split() if "=" in kv) if r.returncode == 0 else {}

    def wait(self, job, timeout):
        """The job's final state (JobState) once it has one; raises after
        `timeout` seconds, the job cancelled."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fields = self.job_fields(job)
            if fields.get("JobState") in FINAL_STATES:
                return fields["JobState"], fields
            time.sleep(1)
        fields = self.job_fields(job)
        self.command(["scancel", job])
        raise ClusterError("job %s not finished within %d s (state %s): cancelled\n%s" % (
            job, timeout, fields.get("JobState", "?"), self.logs()))

    def logs(self):
        if not self.dir:
            return ""
        out = []
        for name in ("slurmctld.log", "slurmd.log", "munged.log", "slurmctld.out", "slurmd.out", "munged.out"):
            if os.path.exists(self.path(name)):
                out.append("--- %s (end)\n%s" % (self.path(name), tail(self.path(name))))
        return "\n".join(out)

    # --- stop ---------------------------------------------------------------
    def stop(self):
        if not self.dir:
            return
        if self.jobs and "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                self.command(["scancel"] + self.jobs, timeout=30)
            except ClusterError:
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=20)
        self.kill_marked()
        if os.environ.get("GPUSLACK_KEEP_SLURM_DIR"):
            print("slurm_cluster: kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def kill_marked(self):
        """SIGKILL to every process whose environment names this cluster's
        folder: what the daemons started and left (slurmstepd, tasks)."""
        marker = ("%s=%s" % (MARKER, self.dir)).encode()
        me = os.getpid()
        for _ in range(5):
            found = []
            for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
                if pid == me:
                    continue
                try:
                    with open("/proc/%d/environ" % pid, "rb") as f:
                        if marker in f.read().split(b"\0"):
                            found.append(pid)
                except OSError:
                    continue
            if not found:
                return
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.5)
