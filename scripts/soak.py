#!/usr/bin/env python3
"""The soak behind scripts/soak (read its header): mixed load on GRACE
while faults are injected, then checks of what was acknowledged, of the
knowledge base, of errors and of latency. Standard library and requests
only; matplotlib for the plot."""

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

import requests

from grace_local import free_port, models_yaml, stop as stop_server, wait_health

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRACE = os.environ.get("GRACE_BIN", "")
# Seconds after a fault within which an error is the fault's.
KILL_WINDOW = 5.0
# Seconds between kills of a server.
KILL_EVERY = 60.0
ASKERS = 2
# Seconds between two questions of one asker.
ASK_EVERY = 1.0
EDIT_EVERY = 3.0
TIMEOUT = 30.0

QUESTIONS = [
    ("How do I install the Orbit CLI?", "Which Python version does it need?"),
    ("How do I roll back a production deployment?", "And on staging?"),
    ("Who is on call this week and how do I page them?", "What if they do not answer?"),
    ("Where are secrets stored?", "Who can read them?"),
    ("How do I rotate an API key?", "How often should I do it?"),
    ("Can I deploy on Fridays?", "Who decides exceptions?"),
    ("What does the error E0382 mean?", "How do I fix it?"),
    ("How do I configure the search limit?", "What is the default?"),
]


def say(*args):
    print("soak:", *args, file=sys.stderr, flush=True)


class Log:
    """Every request, and every acknowledged write, with its time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []  # (t, kind, ok, ms)
        self.errors = []  # (t, kind, what)
        self.sessions = set()  # session ids acknowledged (201)
        self.turns = {}  # session id -> [questions acknowledged]
        self.escalations = {}  # review id -> question
        self.claimed = set()
        self.answers = {}  # review id -> text
        self.ratings = {}  # answer id -> vote
        self.faults = []  # (t, what)
        self.broken = None  # a fault that could not be injected
        self.t0 = time.monotonic()

    def now(self):
        return time.monotonic() - self.t0

    def request(self, kind, ok, ms, what=""):
        with self.lock:
            self.requests.append((self.now(), kind, ok, ms))
            if not ok:
                self.errors.append((self.now(), kind, what))

    def fault(self, what):
        with self.lock:
            self.faults.append((self.now(), what))
        say(f"{self.now():6.1f} s: {what}")


def call(log, kind, method, url, **kw):
    started = time.monotonic()
    try:
        r = requests.request(method, url, timeout=TIMEOUT, **kw)
        ms = (time.monotonic() - started) * 1000
        # A 404 on an ask or a rating: the session or the run was lost.
        ok = r.status_code < 500 and not (kind in ("ask", "rate") and r.status_code == 404)
        log.request(kind, ok, ms, "" if ok else f"HTTP {r.status_code} {r.text[:200]}")
        return r
    except requests.RequestException as e:
        log.request(kind, False, (time.monotonic() - started) * 1000, type(e).__name__)
        return None


def config_yaml(extra):
    return (
        models_yaml()
        + "sessions:\n  max_turns: 10000\n  max_bytes: 60000000\n"
        "feedback:\n  max_ratings_per_hour: 1000000\n"
        + extra
    )


def must(out, what):
    """A fault that could not be injected fails the soak (a run that
    injected nothing must not pass as one that survived it)."""
    if out.returncode != 0:
        raise RuntimeError(f"cannot {what}: {out.stderr.strip()[-300:]}")


class Single:
    """One `grace serve` on the embedded defaults."""

    def __init__(self, work, watched):
        self.work = work
        self.dir = os.path.join(work, "server")
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "grace_config.yml"), "w") as f:
            f.write(config_yaml(f"storage:\n  data_dir: \"{self.dir}/data\"\nserver:\n  watch: [\"{watched}\"]\n"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.kills = 0

    def start(self):
        log = open(os.path.join(self.dir, "serve.log"), "a")
        self.proc = subprocess.Popen(
            [GRACE, "serve", "--bind", f"127.0.0.1:{self.port}"],
            cwd=self.dir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        )
        if not wait_health(self.url, 120):
            raise SystemExit(f"soak: the server did not start: {self.dir}/serve.log")

    def cli(self, *args):
        return subprocess.run([GRACE, *args], cwd=self.dir, capture_output=True, text=True)

    def fault_plan(self, start, end):
        plan, t = [], start
        while t < end:
            plan.append((t, "kill a server", self.kill_server))
            t += KILL_EVERY
        return plan

    def kill_server(self, log):
        log.fault("SIGKILL the server")
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1
        self.start()
        log.fault("the server is back")

    def manifest(self):
        with open(os.path.join(self.dir, "data", "manifests", "grace.json")) as f:
            return json.load(f)

    def ratings(self, answer_id):
        db = sqlite3.connect(os.path.join(self.dir, "data", "feedback.sqlite3"))
        try:
            return db.execute("SELECT COUNT(*) FROM ratings WHERE run_id = ?", (answer_id,)).fetchone()[0]
        finally:
            db.close()

    def repeated_escalations(self):
        db = sqlite3.connect(os.path.join(self.dir, "data", "review.sqlite3"))
        try:
            return db.execute(
                "SELECT question, COUNT(*) FROM escalations GROUP BY question HAVING COUNT(*) > 1").fetchall()
        finally:
            db.close()

    def stop(self):
        stop_server(self.proc)


class Cluster:
    """scripts/cluster's set: 3 servers, PostgreSQL, 3 Qdrant nodes, HAProxy."""

    def __init__(self, work, watched):
        self.work = work
        self.dir = os.path.join(work, "cluster")
        out = subprocess.run(
            ["bash", os.path.join(ROOT, "scripts/cluster"), "up", "--dir", self.dir, "--watch", watched, "--json"],
            capture_output=True, text=True, env={**os.environ, "GRACE_BIN": GRACE},
        )
        if out.returncode != 0:
            raise SystemExit(f"soak: scripts/cluster up failed:\n{out.stderr}")
        self.info = json.loads(out.stdout.strip().splitlines()[-1])
        self.url = self.info["load_balancer"]
        self.kills = 0
        self.next_server = 0
        # Generous limits for the soak: appended to each server's config,
        # then the servers are started again on them.
        for i in range(len(self.info["servers"])):
            path = os.path.join(self.dir, f"server-{i}", "grace_config.yml")
            with open(path, "a") as f:
                f.write("sessions:\n  max_turns: 10000\n  max_bytes: 60000000\nfeedback:\n  max_ratings_per_hour: 1000000\n")
            self.restart_server(i)

    def server_dir(self, i):
        return os.path.join(self.dir, f"server-{i}")

    def restart_server(self, i, kill=True):
        d = self.server_dir(i)
        pid = int(open(os.path.join(d, "serve.pid")).read())
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            time.sleep(0.2)
        port = self.info["servers"][i].rsplit(":", 1)[1]
        log = open(os.path.join(d, "serve.log"), "a")
        proc = subprocess.Popen(
            [GRACE, "serve", "--bind", f"127.0.0.1:{port}"],
            cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            start_new_session=True,
        )
        with open(os.path.join(d, "serve.pid"), "w") as f:
            f.write(str(proc.pid))
        return proc

    def cli(self, *args):
        return subprocess.run([GRACE, *args], cwd=self.server_dir(0), capture_output=True, text=True)

    def fault_plan(self, start, end):
        plan, t = [], start
        while t < end:
            plan.append((t, "kill a server", self.kill_server))
            t += KILL_EVERY
        span = end - start
        plan.append((start + span * 0.3, "kill a Qdrant node", self.kill_qdrant))
        plan.append((start + span * 0.6, "restart PostgreSQL", self.restart_postgres))
        return sorted(plan, key=lambda p: p[0])

    def kill_server(self, log):
        i = self.next_server % len(self.info["servers"])
        self.next_server += 1
        self.kills += 1
        log.fault(f"SIGKILL server {i}")
        self.restart_server(i)
        wait_health(self.info["servers"][i], 60)
        log.fault(f"server {i} is back")

    def kill_qdrant(self, log):
        qdrant = os.path.join(ROOT, "scripts/qdrant")
        node = len(self.info["qdrant"]) - 1
        log.fault(f"SIGKILL Qdrant node {node}")
        must(subprocess.run(["bash", qdrant, "kill", "--dir", os.path.join(self.dir, "qdrant"), "--node", str(node)],
                            capture_output=True, text=True), "kill a Qdrant node")
        self.kills += 1
        time.sleep(10)
        must(subprocess.run(["bash", qdrant, "restart", "--dir", os.path.join(self.dir, "qdrant"), "--node", str(node)],
                            capture_output=True, text=True), "restart a Qdrant node")
        log.fault(f"Qdrant node {node} is back")

    def pg(self, *args):
        binary = max(os.listdir("/usr/lib/postgresql"), key=lambda v: [int(x) for x in v.split(".") if x.isdigit()])
        cmd = [f"/usr/lib/postgresql/{binary}/bin/{args[0]}", *args[1:]]
        if os.geteuid() == 0:
            cmd = ["setpriv", "--reuid", "postgres", "--regid", "postgres", "--init-groups", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)

    def restart_postgres(self, log):
        log.fault("restart PostgreSQL")
        self.kills += 1
        # -l: the new server must not hold this process's pipes open.
        must(self.pg("pg_ctl", "restart", "-D", os.path.join(self.dir, "postgres"), "-m", "fast", "-w",
                     "-l", os.path.join(self.dir, "postgres.log")), "restart PostgreSQL")
        log.fault("PostgreSQL is back")

    def psql(self, sql):
        port = self.info["postgres"].rsplit(":", 1)[1].split("/")[0]
        out = self.pg("psql", "-h", "127.0.0.1", "-p", port, "-U", "grace", "-d", "postgres", "-At", "-c", sql)
        if out.returncode != 0:
            raise SystemExit(f"soak: psql: {out.stderr}")
        return out.stdout

    def manifest(self):
        text = self.psql("SELECT convert_from(body, 'UTF8') FROM grace.documents WHERE name = 'manifest/grace'")
        return json.loads(text)

    def ratings(self, answer_id):
        return int(self.psql(f"SELECT COUNT(*) FROM grace.ratings WHERE run_id = '{answer_id}'").strip())

    def repeated_escalations(self):
        text = self.psql("SELECT COUNT(*), question FROM grace.escalations GROUP BY question HAVING COUNT(*) > 1")
        return [(line.split("|", 1)[1], int(line.split("|", 1)[0])) for line in text.splitlines() if "|" in line]

    def stop(self):
        subprocess.run(["bash", os.path.join(ROOT, "scripts/cluster"), "down", "--dir", self.dir], capture_output=True)


def asker(system, log, stop, n):
    rng = random.Random(n)
    count = 0
    while not stop.is_set():
        started = time.monotonic()
        r = call(log, "session", "POST", f"{system.url}/v1/sessions")
        if r is not None and r.status_code == 201:
            sid = r.json()["id"]
            with log.lock:
                log.sessions.add(sid)
            for q in rng.choice(QUESTIONS):
                count += 1
                question = f"{q} (asker {n}, {count})"
                t0 = time.monotonic()
                r = call(log, "ask", "POST", f"{system.url}/v1/ask", json={"question": question, "session_id": sid})
                if r is None or r.status_code != 200:
                    continue
                body = r.json()
                with log.lock:
                    log.turns.setdefault(sid, []).append(question)
                    if body.get("review_id"):
                        log.escalations[body["review_id"]] = question
                if body.get("answer_id") and body.get("decision") in ("answer", "caveat"):
                    vote = rng.choice(["up", "down"])
                    r = call(log, "rate", "POST", f"{system.url}/v1/answers/{body['answer_id']}/feedback",
                             json={"vote": vote, "session_id": sid})
                    if r is not None and r.status_code == 200:
                        with log.lock:
                            log.ratings[body["answer_id"]] = vote
                stop.wait(max(0.0, ASK_EVERY - (time.monotonic() - t0)))
        stop.wait(max(0.0, 0.2 - (time.monotonic() - started)))


def reviewer(system, log, stop, token):
    auth = {"Authorization": f"Bearer {token}"}
    while not stop.is_set():
        r = call(log, "list", "GET", f"{system.url}/v1/review/escalations?status=pending&limit=5", headers=auth)
        items = []
        if r is not None and r.status_code == 200:
            body = r.json()
            items = body if isinstance(body, list) else body.get("escalations", body.get("items", []))
        for e in items[:2]:
            rid = e["id"]
            r = call(log, "claim", "POST", f"{system.url}/v1/review/escalations/{rid}/claim", headers=auth)
            if r is None or r.status_code != 200:
                continue
            with log.lock:
                log.claimed.add(rid)
            text = f"Soak answer to escalation {rid}."
            r = call(log, "answer", "POST", f"{system.url}/v1/review/escalations/{rid}/answer", headers=auth, json={"text": text})
            if r is not None and r.status_code == 200:
                with log.lock:
                    log.answers[rid] = text
        stop.wait(0.5)


def editor(watched, log, stop):
    rng = random.Random(7)
    n = 0
    while not stop.wait(EDIT_EVERY):
        mine = sorted(f for f in os.listdir(watched) if f.startswith("soak-"))
        action = rng.choice(["add", "add", "change", "delete"]) if mine else "add"
        if action == "add":
            n += 1
            name = f"soak-{n}.md"
            with open(os.path.join(watched, name), "w") as f:
                f.write(f"# Soak note {n}\n\nThe soak wrote note {n} at {time.time():.3f}; its code word is soakword{n}.\n")
        elif action == "change":
            with open(os.path.join(watched, rng.choice(mine)), "a") as f:
                f.write(f"\nChanged at {time.time():.3f}.\n")
        else:
            os.remove(os.path.join(watched, rng.choice(mine)))


def faulter(system, log, stop, plan):
    for at, _what, act in plan:
        while log.now() < at:
            if stop.wait(0.2):
                return
        try:
            act(log)
        except RuntimeError as e:
            say(str(e))
            log.broken = str(e)
            return


def clean_manifest(watched, work):
    data = os.path.join(work, "clean")
    config = os.path.join(work, "clean.yml")
    with open(config, "w") as f:
        f.write(config_yaml(f"storage:\n  data_dir: \"{data}\"\n"))
    out = subprocess.run([GRACE, "--config", config, "ingest", watched, "-q"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"soak: the clean ingest failed: {out.stderr}")
    with open(os.path.join(data, "manifests", "grace.json")) as f:
        return json.load(f)


def shape(manifest):
    return {k: (v["content_hash"], len(v["point_ids"])) for k, v in manifest["sources"].items() if v["state"] == "committed"}


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(-(-q * len(values) // 1)) - 1))]


def plot(log, baseline_end, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("no matplotlib (scripts/setup --soak): no plot")
        return None
    asks = [(t, ms) for t, kind, ok, ms in log.requests if kind == "ask"]
    fig, ax = plt.subplots(figsize=(10, 4))
    ok = [(t, ms) for (t, kind, good, ms) in log.requests if kind == "ask" and good]
    bad = [(t, ms) for (t, kind, good, ms) in log.requests if kind == "ask" and not good]
    if ok:
        ax.scatter([t for t, _ in ok], [ms for _, ms in ok], s=4, label="ask answered")
    if bad:
        ax.scatter([t for t, _ in bad], [ms for _, ms in bad], s=12, marker="x", color="red", label="ask failed")
    for t, what in log.faults:
        if "back" not in what:
            ax.axvline(t, color="red", alpha=0.5)
            ax.text(t, ax.get_ylim()[1] * 0.95, what, rotation=90, fontsize=7, va="top")
    ax.axvline(baseline_end, color="grey", linestyle="--", label="faults begin")
    ax.set_xlabel("seconds")
    ax.set_ylabel("ask latency, ms")
    ax.set_yscale("log")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path if asks else None


def main():
    p = argparse.ArgumentParser(description="scripts/soak: read its header")
    p.add_argument("--mode", choices=["single", "cluster"], required=True)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--dir")
    a = p.parse_args()
    if not (0.5 <= a.minutes <= 1440):
        p.error("--minutes: 0.5 to 1440")
    if not GRACE:
        p.error("GRACE_BIN is not set (run scripts/soak, not this file)")
    work = a.dir or tempfile.mkdtemp(prefix="grace-soak-")
    os.makedirs(work, exist_ok=True)
    # PostgreSQL runs as its own user when this is root (scripts/cluster):
    # it must reach its folder inside this one (mkdtemp makes it 0700).
    os.chmod(work, 0o755)
    watched = os.path.join(work, "kb")
    shutil.copytree(os.path.join(ROOT, "examples/kb"), watched)
    seconds = a.minutes * 60
    baseline = min(60.0, seconds / 3)

    log = Log()
    system = Single(work, watched) if a.mode == "single" else None
    try:
        if system is None:
            system = Cluster(work, watched)
        else:
            system.start()
        if not wait_health(system.url, 120):
            raise SystemExit("soak: the set did not answer /health")
        reg = system.cli("--json", "review", "register", "soak-reviewer", "--name", "Soak")
        if reg.returncode != 0:
            raise SystemExit(f"soak: cannot register a reviewer: {reg.stderr}")
        token = json.loads(reg.stdout)["token"]
        # The leader ingested the folder: wait for it before the clock starts.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                r = requests.post(f"{system.url}/v1/search", json={"query": "install the orbit cli", "limit": 1}, timeout=10)
                if r.status_code == 200 and r.json().get("passages"):
                    break
            except requests.RequestException:
                pass
            time.sleep(0.5)
        log.t0 = time.monotonic()
        stop = threading.Event()
        plan = system.fault_plan(baseline, seconds - 5)
        threads = [threading.Thread(target=asker, args=(system, log, stop, n)) for n in range(ASKERS)]
        threads.append(threading.Thread(target=reviewer, args=(system, log, stop, token)))
        threads.append(threading.Thread(target=editor, args=(watched, log, stop)))
        threads.append(threading.Thread(target=faulter, args=(system, log, stop, plan)))
        for t in threads:
            t.start()
        say(f"{a.mode}: {seconds:.0f} s of load, faults after {baseline:.0f} s")
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        elapsed = log.now()

        # The folder's last changes are ingested (the leader follows it).
        expected = clean_manifest(watched, work)
        settled = False
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if shape(system.manifest()) == shape(expected):
                    settled = True
                    break
            except (OSError, ValueError, SystemExit):
                pass
            time.sleep(1)

        # Every acknowledged write, present exactly once.
        lost, duplicated, acknowledged = [], [], 0
        for sid in sorted(log.sessions):
            acknowledged += 1
            questions = log.turns.get(sid, [])
            acknowledged += len(questions)
            r = requests.get(f"{system.url}/v1/sessions/{sid}", timeout=TIMEOUT)
            if r.status_code != 200:
                lost.append(f"session {sid}")
            present = [t["question"] for t in r.json().get("turns", [])] if r.status_code == 200 else []
            for q in questions:
                c = present.count(q)
                if c == 0:
                    lost.append(f"turn {q!r}")
                elif c > 1:
                    duplicated.append(f"turn {q!r}")
        for rid, question in log.escalations.items():
            acknowledged += 1
            r = requests.get(f"{system.url}/v1/review/escalations/{rid}", timeout=TIMEOUT)
            if r.status_code != 200 or r.json().get("question") != question:
                lost.append(f"escalation {rid}")
        # Every question is asked once (its text is numbered): two
        # escalations of one question are a write made twice.
        for question, n in system.repeated_escalations():
            duplicated.append(f"escalation of {question!r} x{n}")
        answered_twice, lost_claims = [], []
        for rid in sorted(log.claimed):
            r = requests.get(f"{system.url}/v1/review/escalations/{rid}/log", timeout=TIMEOUT)
            entries = r.json() if r.status_code == 200 else []
            entries = entries if isinstance(entries, list) else entries.get("entries", [])
            answers = sum(1 for e in entries if e.get("action") == "answered")
            status = requests.get(f"{system.url}/v1/review/escalations/{rid}", timeout=TIMEOUT).json().get("status")
            if answers > 1:
                answered_twice.append(rid)
            if status not in ("claimed", "answered"):
                lost_claims.append(rid)
            if rid in log.answers:
                acknowledged += 1
                if answers == 0:
                    lost.append(f"answer {rid}")
                elif answers > 1:
                    duplicated.append(f"answer {rid}")
        for answer_id in log.ratings:
            acknowledged += 1
            n = system.ratings(answer_id)
            if n == 0:
                lost.append(f"rating {answer_id}")
            elif n > 1:
                duplicated.append(f"rating {answer_id}")

        # A fault's window: from the kill until KILL_WINDOW seconds after
        # the part killed is back (a Qdrant node stays down ~10 s).
        windows, opened = [], None
        for t, what in log.faults:
            if "back" in what:
                if opened is not None:
                    windows.append((opened, t + KILL_WINDOW))
                    opened = None
            else:
                if opened is not None:
                    windows.append((opened, t + KILL_WINDOW))
                opened = t
        if opened is not None:
            windows.append((opened, opened + KILL_WINDOW))

        def in_window(t):
            return any(a <= t <= b for a, b in windows)

        errors_in = sum(1 for t, kind, ok, ms in log.requests if not ok and in_window(t))
        errors_out = sum(1 for t, kind, ok, ms in log.requests if not ok and not in_window(t))
        # The baseline without its warm-up (the first asks fill the caches).
        warmup = min(10.0, baseline / 3)
        base = [ms for t, kind, ok, ms in log.requests if kind == "ask" and ok and warmup <= t < baseline]
        later = [ms for t, kind, ok, ms in log.requests if kind == "ask" and ok and t >= baseline and not in_window(t)]
        p99_base, p99_out = percentile(base, 0.99), percentile(later, 0.99)
        png = plot(log, baseline, os.path.join(work, "soak-latency.png"))
        report = {
            "mode": a.mode,
            "seconds": round(elapsed, 1),
            "kills": system.kills,
            "acknowledged_writes": acknowledged,
            "lost": len(lost) + len(lost_claims),
            "duplicated": len(duplicated) + len(answered_twice),
            "kb_equals_clean_ingest": settled,
            "errors_within_kill_windows": errors_in,
            "errors_outside_kill_windows": errors_out,
            "p99_ms_outside_kill_windows": round(p99_out, 1) if p99_out else None,
            "p99_ms_no_faults": round(p99_base, 1) if p99_base else None,
            "requests": len(log.requests),
            "asks": sum(1 for r in log.requests if r[1] == "ask"),
            "sessions": len(log.turns),
            "escalations": len(log.escalations),
            "answers": len(log.answers),
            "ratings": len(log.ratings),
            "faults": [{"at": round(t, 1), "what": w} for t, w in log.faults],
            "kill_windows": [[round(a, 1), round(b, 1)] for a, b in windows],
            "errors_outside_detail": [f"{t:.1f} s {k}: {w}" for t, k, w in log.errors if not in_window(t)][:20],
            "lost_detail": (lost + [f"claimed escalation {r}" for r in lost_claims])[:20],
            "duplicated_detail": (duplicated + [f"escalation {r} answered twice" for r in answered_twice])[:20],
            "plot": png,
            "requests_file": os.path.join(work, "requests.jsonl"),
            "dir": work,
        }
        # Every request, for a look afterwards (when, what, answered, ms).
        with open(report["requests_file"], "w") as f:
            for t, kind, ok, ms in log.requests:
                f.write(json.dumps({"t": round(t, 3), "kind": kind, "ok": ok, "ms": round(ms, 2)}) + "\n")
        goals = (
            report["lost"] == 0
            and report["duplicated"] == 0
            and settled
            and errors_out == 0
            and p99_out is not None
            and p99_base is not None
            and p99_out <= 1.5 * p99_base
        )
        report["fault_not_injected"] = log.broken
        goals = goals and log.broken is None
        report["goals_met"] = goals
        if a.json:
            print(json.dumps(report))
        else:
            for k, v in report.items():
                print(f"{k}: {v}")
        return 0 if goals else 1
    finally:
        if system is not None:
            system.stop()


if __name__ == "__main__":
    sys.exit(main())
