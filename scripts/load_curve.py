#!/usr/bin/env python3
"""The load curve behind scripts/load-curve (read its header): wrk against
`POST /v1/ask` at rising concurrency, on one `grace serve` or on
scripts/cluster's set behind HAProxy; per level the answered (HTTP 200)
requests per second, their p50 and p99, the 429s, the other failures, and
the CPU seconds each process spent per answered request. Standard library
only; matplotlib for the plot."""

import argparse
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from grace_local import free_port, models_yaml, stop as stop_server, wait_health

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRACE = os.environ.get("GRACE_BIN", "")
WRK = os.environ.get("GRACE_WRK", "wrk")
# server.max_concurrency: written into the single server's config, and the
# default the cluster's servers run with (scripts/cluster sets none).
MAX_CONCURRENCY = 16
# server.request_timeout is 60 s: wrk waits longer, so that a request the
# server is still working on is never counted as a client timeout.
WRK_TIMEOUT = "65s"
# The bend: throughput grows by less than this factor from one level to
# the next, or p99 grows by more than P99_JUMP.
BEND_GAIN = 1.1
P99_JUMP = 2.0
# Over the limit, the answered requests' p99 is called bounded while it
# stays within this factor of the p99 at the last level within the limit.
BOUNDED = 3.0
CLK_TCK = os.sysconf("SC_CLK_TCK")

# The questions of scripts/load, each request's text made new by a tag
# "(run thread.n)": no question vector is reused from an earlier request.
# The ask's answer repeats the question, so the tag of a response tells
# which request it answers, and its latency is measured for the answered
# (200) requests alone: wrk's own percentiles mix in the 429s, answered in
# a millisecond. The clock: clock_gettime through LuaJIT's FFI.
LUA = r'''
local questions = {
  "How do I rotate an API key?",
  "How do I roll back a production deployment?",
  "Who is on call this week and how do I page them?",
  "What does the error E0382 mean?",
  "How do I configure the search limit?",
  "Can I deploy on Fridays?",
  "Where are secrets stored?",
  "How do I get started with my first deployment?",
}
local have_ffi, ffi = pcall(require, "ffi")
local now
if have_ffi then
  ffi.cdef[[
    typedef struct { long tv_sec; long tv_nsec; } load_curve_timespec;
    int clock_gettime(int clk_id, load_curve_timespec *tp);
  ]]
  local ts = ffi.new("load_curve_timespec")
  now = function()
    ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
  end
end

local threads = {}
setup = function(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end
local run, n = "run", 0
local sent = {}
lat = {}     -- ms, the answered (200) requests of this thread
codes = {}   -- status -> responses
untagged = 0 -- 200s whose request could not be told (no latency kept)
init = function(args)
  run = args[1] or run
end
request = function()
  n = n + 1
  if now then sent[n] = now() end
  local q = questions[(n % #questions) + 1] .. " (" .. run .. " " .. tostring(tid) .. "." .. n .. ")"
  local body = '{"question": "' .. q .. '", "queue": false}'
  return wrk.format("POST", "/v1/ask", {["Content-Type"] = "application/json"}, body)
end
response = function(status, headers, body)
  local key = tostring(status)
  codes[key] = (codes[key] or 0) + 1
  if status == 200 and now then
    local i = tonumber(string.match(body, "%(" .. run .. " %d+%.(%d+)%)"))
    if i and sent[i] then
      lat[#lat + 1] = now() - sent[i]
      sent[i] = nil
    else
      untagged = untagged + 1
    end
  end
end
done = function(summary, latency, requests)
  local all, agg, miss = {}, {}, 0
  for _, t in ipairs(threads) do
    for _, v in ipairs(t:get("lat") or {}) do all[#all + 1] = string.format("%.2f", v) end
    for k, v in pairs(t:get("codes") or {}) do agg[k] = (agg[k] or 0) + v end
    miss = miss + (t:get("untagged") or 0)
  end
  local parts = {}
  for k, v in pairs(agg) do parts[#parts + 1] = '"' .. k .. '": ' .. v end
  local e = summary.errors
  io.write(string.format(
    'LOADCURVE {"seconds": %.3f, "requests": %d, "connect": %d, "read": %d, "write": %d, "status": %d, '
    .. '"timeout": %d, "wrk_p50_ms": %.2f, "wrk_p99_ms": %.2f, "clock": %s, "untagged": %d, '
    .. '"codes": {%s}, "latencies_ms": [%s]}\n',
    summary.duration / 1e6, summary.requests, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, tostring(have_ffi), miss,
    table.concat(parts, ", "), table.concat(all, ", ")))
end
'''


def say(*args):
    print("load-curve:", *args, file=sys.stderr, flush=True)


def ask(url, question):
    req = urllib.request.Request(
        f"{url}/v1/ask", data=json.dumps({"question": question, "queue": False}).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def percentile(sorted_values, q):
    """Nearest rank, as wrk's own percentiles."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, math.ceil(q / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


# --------------------------------------------------------------- CPU time ---

def proc_stat(pid):
    """(ppid, utime+stime, cutime+cstime) in seconds, or None once gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()  # the name may hold spaces
    # fields[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK, (int(fields[13]) + int(fields[14])) / CLK_TCK


def tree_cpu(pid):
    """CPU seconds of a process, its reaped children and its living
    children (PostgreSQL's backends come and go)."""
    me = proc_stat(pid)
    if me is None:
        return 0.0
    total = me[1] + me[2]
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != pid:
            st = proc_stat(int(entry))
            if st is not None and st[0] == pid:
                total += st[1]
    return total


def machine_busy():
    """CPU seconds all cores spent busy (not idle, not waiting on I/O)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / CLK_TCK


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.readline().strip())
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------ the systems ---

def config_yaml(data_dir):
    return (
        f"storage:\n  data_dir: \"{data_dir}\"\n"
        + models_yaml()
        + f"server:\n  max_concurrency: {MAX_CONCURRENCY}\n"
    )


class Single:
    """One `grace serve` on the embedded defaults (SQLite, qdrant-edge)."""

    servers = 1

    def __init__(self, work):
        self.dir = os.path.join(work, "single")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        with open(os.path.join(self.dir, "grace_config.yml"), "w") as f:
            f.write(config_yaml(os.path.join(self.dir, "data")))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self):
        out = subprocess.run([GRACE, "-q", "ingest", os.path.join(ROOT, "examples/kb")],
                             cwd=self.dir, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"load-curve: grace ingest failed:\n{out.stderr}")
        log = open(os.path.join(self.dir, "serve.log"), "a")
        self.proc = subprocess.Popen(
            [GRACE, "serve", "--bind", f"127.0.0.1:{self.port}"],
            cwd=self.dir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        if not wait_health(self.url):
            raise SystemExit(f"load-curve: the server did not start: {self.dir}/serve.log")

    def groups(self):
        """name -> pids whose CPU is counted."""
        return {"grace": [self.proc.pid]}

    def stop(self):
        stop_server(self.proc)


class Cluster:
    """scripts/cluster's set: 3 servers over PostgreSQL and a 3-node Qdrant
    cluster, HAProxy in front."""

    def __init__(self, work):
        self.dir = os.path.join(work, "cluster")
        self.started = False
        self.info = None

    def start(self):
        # A cluster already running there makes `up` refuse (exit 2): then
        # this run started nothing and stops nothing. On any other failure
        # `up` stops what it started, and `down` again does no harm.
        self.started = True
        out = subprocess.run(
            ["bash", os.path.join(ROOT, "scripts/cluster"), "up", "--dir", self.dir, "--json"],
            capture_output=True, text=True, env={**os.environ, "GRACE_BIN": GRACE})
        if out.returncode == 2:
            self.started = False
        if out.returncode != 0:
            raise SystemExit(f"load-curve: scripts/cluster up failed:\n{out.stderr}")
        self.info = json.loads(out.stdout.strip().splitlines()[-1])
        self.url = self.info["load_balancer"]
        self.servers = len(self.info["servers"])
        # `up` waits for HAProxy's /health, which one server is enough to
        # answer; a server started while the Qdrant cluster was still
        # forming may have exited (seen: "0 of 0 read operations failed").
        # Each is started again until all three answer.
        for i, url in enumerate(self.info["servers"]):
            if not wait_health(url, 10):
                say(f"server {i} is not up ({self.dir}/server-{i}/serve.log): starting it again")
                self.restart_server(i)
                if not wait_health(url, 60):
                    raise SystemExit(f"load-curve: server {i} did not start: {self.dir}/server-{i}/serve.log")
        # The sample, ingested once into the shared stores (PostgreSQL's
        # manifest, the Qdrant collection) with server 0's configuration.
        out = subprocess.run([GRACE, "-q", "ingest", os.path.join(ROOT, "examples/kb")],
                             cwd=os.path.join(self.dir, "server-0"), capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"load-curve: grace ingest into the cluster failed:\n{out.stderr}")
        # Every server must find the sample's passages before the clock starts.
        for url in self.info["servers"]:
            try:
                got = ask(url, "How do I rotate an API key?")
            except (OSError, ValueError) as e:
                raise SystemExit(f"load-curve: {url} did not answer a question after the ingest: {e}")
            steps = got.get("steps") or []
            found = any((s.get("result") or {}).get("output", {}).get("data") for s in steps)
            if not found:
                raise SystemExit(f"load-curve: {url} found no passage after the ingest")

    def restart_server(self, i):
        d = os.path.join(self.dir, f"server-{i}")
        pid = read_pid(os.path.join(d, "serve.pid"))
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
                time.sleep(0.2)
            except ProcessLookupError:
                pass
        port = self.info["servers"][i].rsplit(":", 1)[1]
        with open(os.path.join(d, "serve.log"), "a") as log:
            proc = subprocess.Popen([GRACE, "serve", "--bind", f"127.0.0.1:{port}"], cwd=d,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        # scripts/cluster down stops it by this file.
        with open(os.path.join(d, "serve.pid"), "w") as f:
            f.write(str(proc.pid))

    def groups(self):
        d = self.dir
        g = {"grace": [p for p in (read_pid(os.path.join(d, f"server-{i}", "serve.pid"))
                                   for i in range(self.servers)) if p]}
        g["haproxy"] = [p for p in [read_pid(os.path.join(d, "haproxy.pid"))] if p]
        g["postgres"] = [p for p in [read_pid(os.path.join(d, "postgres", "postmaster.pid"))] if p]
        # scripts/qdrant's registry: one file per node, its folder in it.
        registry = os.path.join(os.environ.get("TMPDIR", "/tmp"), "grace-qdrant", "instances")
        qdrant = []
        try:
            for name in os.listdir(registry):
                env = {}
                with open(os.path.join(registry, name)) as f:
                    for line in f:
                        k, _, v = line.strip().partition("=")
                        env[k] = v
                if os.path.realpath(env.get("dir", "")).startswith(os.path.realpath(os.path.join(d, "qdrant")) + os.sep):
                    qdrant.append(int(env["pid"]))
        except (OSError, ValueError, KeyError):
            pass
        g["qdrant"] = qdrant
        return g

    def stop(self):
        if self.started:
            subprocess.run(["bash", os.path.join(ROOT, "scripts/cluster"), "down", "--dir", self.dir],
                           capture_output=True)


# ------------------------------------------------------------- the levels ---

def cpu_snapshot(system):
    return {name: sum(tree_cpu(p) for p in pids) for name, pids in system.groups().items()}


def run_wrk(work, url, connections, seconds, tag):
    script = os.path.join(work, "ask.lua")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(LUA)
    threads = min(connections, 2)
    cmd = [WRK, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency",
           "--timeout", WRK_TIMEOUT, "-s", script, url, "--", tag]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    line = next((l for l in out.stdout.splitlines() if l.startswith("LOADCURVE ")), None)
    if out.returncode != 0 or line is None:
        raise SystemExit(f"load-curve: wrk failed ({' '.join(cmd)}):\n{out.stdout}\n{out.stderr}")
    return threads, json.loads(line[len("LOADCURVE "):]), out.stdout


def level(system, work, connections, seconds, tag):
    before_cpu, before_busy, t0 = cpu_snapshot(system), machine_busy(), time.monotonic()
    before_wrk = resource.getrusage(resource.RUSAGE_CHILDREN)
    threads, w, raw = run_wrk(work, system.url, connections, seconds, tag)
    after_wrk = resource.getrusage(resource.RUSAGE_CHILDREN)
    after_cpu, after_busy, wall = cpu_snapshot(system), machine_busy(), time.monotonic() - t0
    codes = {int(k): v for k, v in w["codes"].items()}
    ok = codes.get(200, 0)
    s429 = codes.get(429, 0)
    other = sum(v for k, v in codes.items() if k != 429 and not 200 <= k < 300)
    socket_errors = w["connect"] + w["read"] + w["write"] + w["timeout"]
    lat = sorted(w["latencies_ms"])
    secs = w["seconds"]
    cpu = {name: after_cpu[name] - before_cpu.get(name, 0.0) for name in after_cpu}
    cpu["wrk"] = (after_wrk.ru_utime + after_wrk.ru_stime) - (before_wrk.ru_utime + before_wrk.ru_stime)
    busy = after_busy - before_busy
    counted = sum(cpu.values())
    responses = sum(codes.values())
    return {
        "concurrency": connections,
        "threads": threads,
        "seconds": round(secs, 2),
        "responses": responses,
        "answered": ok,
        "answered_per_s": round(ok / secs, 1) if secs else 0.0,
        "p50_ms": percentile(lat, 50),
        "p99_ms": percentile(lat, 99),
        "max_ms": lat[-1] if lat else None,
        "latency_measured": len(lat),
        "status_429": s429,
        "share_429": round(s429 / responses, 4) if responses else 0.0,
        "other_non_2xx": other,
        "codes": {str(k): v for k, v in sorted(codes.items())},
        "socket_errors": socket_errors,
        "wrk_p50_ms_all": w["wrk_p50_ms"],
        "wrk_p99_ms_all": w["wrk_p99_ms"],
        # CPU seconds per process group over the level, and per answered
        # request (ms); "other": the machine's busy time nobody here spent
        # (another program on the machine: the figures are then unreliable).
        "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
        "cpu_ms_per_answered": {k: (round(1000 * v / ok, 2) if ok else None) for k, v in cpu.items()},
        "machine_busy_s": round(busy, 2),
        "machine_busy_share": round(min(1.0, busy / (wall * os.cpu_count())), 3),
        "other_cpu_s": round(max(0.0, busy - counted), 2),
    }


def bend(rows):
    """The first level whose throughput is < BEND_GAIN x the previous
    level's, or whose p99 is > P99_JUMP x the previous level's."""
    for prev, row in zip(rows, rows[1:]):
        reasons = []
        if row["answered_per_s"] < BEND_GAIN * prev["answered_per_s"]:
            reasons.append(f"throughput {row['answered_per_s']} < {BEND_GAIN} x {prev['answered_per_s']}")
        if prev["p99_ms"] and row["p99_ms"] and row["p99_ms"] > P99_JUMP * prev["p99_ms"]:
            reasons.append(f"p99 {row['p99_ms']:.0f} ms > {P99_JUMP} x {prev['p99_ms']:.0f} ms")
        if reasons:
            return {"concurrency": row["concurrency"], "after": prev["concurrency"], "why": reasons}
    return None


def shedding(rows, limit):
    """Over the limit: the share of 429, and whether the answered
    requests' p99 stays within BOUNDED x the p99 at the last level within."""
    within = [r for r in rows if r["concurrency"] <= limit]
    over = [r for r in rows if r["concurrency"] > limit]
    if not over:
        return {"limit": limit, "levels_over_limit": [], "note": "no level above the limit"}
    ref = within[-1]["p99_ms"] if within and within[-1]["p99_ms"] else None
    levels = []
    for r in over:
        ratio = round(r["p99_ms"] / ref, 2) if ref and r["p99_ms"] else None
        levels.append({
            "concurrency": r["concurrency"], "share_429": r["share_429"], "p99_ms": r["p99_ms"],
            "p99_vs_within": ratio, "answered_per_s": r["answered_per_s"],
            "other_failures": r["other_non_2xx"] + r["socket_errors"],
        })
    sheds = all(l["share_429"] > 0 for l in levels)
    bounded = ref is not None and all(l["p99_vs_within"] is not None and l["p99_vs_within"] <= BOUNDED
                                      for l in levels)
    clean = all(l["other_failures"] == 0 for l in levels)
    return {"limit": limit, "reference_concurrency": within[-1]["concurrency"] if within else None,
            "reference_p99_ms": ref, "bound": BOUNDED, "levels_over_limit": levels,
            "sheds_with_429": sheds, "p99_bounded": bounded, "no_other_failures": clean,
            "works": sheds and bounded and clean}


# ----------------------------------------------------------------- output ---

def fmt(v, nd=0):
    return "–" if v is None else f"{v:.{nd}f}"


def markdown(result):
    rows = result["levels"]
    groups = [g for g in ("grace", "postgres", "qdrant", "haproxy", "wrk") if g in rows[0]["cpu_s"]] if rows else []
    head = ["concurrency", "answered/s", "p50 ms", "p99 ms", "429", "429 share", "other non-2xx", "socket errors"]
    head += [f"{g} CPU ms/answer" for g in groups] + ["machine busy", "other CPU s"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r["concurrency"]), fmt(r["answered_per_s"], 1), fmt(r["p50_ms"]), fmt(r["p99_ms"]),
                 str(r["status_429"]), f"{100 * r['share_429']:.1f}%", str(r["other_non_2xx"]), str(r["socket_errors"])]
        cells += [fmt(r["cpu_ms_per_answered"][g], 1) for g in groups]
        cells += [f"{100 * r['machine_busy_share']:.0f}%" if r["machine_busy_share"] is not None else "–",
                  fmt(r["other_cpu_s"], 1)]
        out.append("| " + " | ".join(cells) + " |")
    lines = [f"load-curve: mode {result['mode']}, {result['servers']} server(s), {result['cores']} cores, "
             f"{result['duration_s']} s per level, limit {result['limit']} in flight "
             f"({result['servers']} x server.max_concurrency {MAX_CONCURRENCY})", ""]
    lines += out + [""]
    b = result["bend"]
    lines.append("bend: " + (f"at {b['concurrency']} (after {b['after']}): {'; '.join(b['why'])}" if b
                             else "none within the levels run"))
    s = result["shedding"]
    if s.get("levels_over_limit"):
        for l in s["levels_over_limit"]:
            lines.append(f"over the limit, {l['concurrency']}: {100 * l['share_429']:.1f}% answered 429, "
                         f"answered p99 {fmt(l['p99_ms'])} ms ({fmt(l['p99_vs_within'], 2)} x the p99 at the "
                         f"last level within), {l['other_failures']} other failures")
        yes = {True: "yes", False: "no"}
        lines.append(f"shedding: {'works' if s['works'] else 'falls short'} (429 at every level over the limit: "
                     f"{yes[s['sheds_with_429']]}; answered p99 within {s['bound']} x that at "
                     f"{s['reference_concurrency']}: {yes[s['p99_bounded']]}; "
                     f"no other failures: {yes[s['no_other_failures']]})")
    else:
        lines.append("shedding: no level above the limit")
    if result["mode"] == "cluster" and result["cores"] <= 4:
        lines.append(f"note: the whole cluster shares these {result['cores']} cores: its figures show correctness "
                     "under load, not a speed-up (the book, \"Load\", estimates the speed-up from the CPU ms per answer)")
    if rows and max(r["other_cpu_s"] for r in rows) > 0.1 * result["duration_s"] * result["cores"]:
        lines.append("warning: other programs used a tenth of the machine or more during a level "
                     "(column \"other CPU s\"): run again on a quiet machine")
    lines.append(f"plot: {result['plot']}")
    return "\n".join(lines)


def plot(result, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        say("matplotlib is missing (scripts/setup --soak): no plot")
        return None
    rows = result["levels"]
    x = [r["concurrency"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    top.plot(x, [r["answered_per_s"] for r in rows], "o-", label="answered (200) req/s")
    top.set_ylabel("answered requests / s")
    top.set_ylim(bottom=0)
    share = top.twinx()
    share.plot(x, [100 * r["share_429"] for r in rows], "s--", color="tab:red", label="429 share")
    share.set_ylabel("429, % of responses", color="tab:red")
    share.set_ylim(0, 100)
    lats = [v for r in rows for v in (r["p50_ms"], r["p99_ms"]) if v]
    lat_lo, lat_hi = (min(lats), max(lats)) if lats else (1, 1000)
    bottom.plot(x, [r["p50_ms"] for r in rows], "o-", label="p50 (answered)")
    bottom.plot(x, [r["p99_ms"] for r in rows], "o-", label="p99 (answered)")
    bottom.set_yscale("log")
    bottom.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    bottom.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    bottom.set_yticks([t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 60000)
                       if lat_lo / 2 <= t <= lat_hi * 2])
    bottom.set_ylabel("latency, ms")
    bottom.set_xscale("log", base=2)
    bottom.set_xticks(x)
    bottom.set_xticklabels([str(v) for v in x])
    bottom.set_xlabel("concurrency (wrk connections)")
    for ax in (top, bottom):
        ax.axvline(result["limit"], color="grey", linestyle=":", label=f"limit {result['limit']}")
        if result["bend"]:
            ax.axvline(result["bend"]["concurrency"], color="tab:orange", linestyle="--", alpha=0.6,
                       label=f"bend {result['bend']['concurrency']}")
        ax.grid(True, which="both", alpha=0.3)
    h1, l1 = top.get_legend_handles_labels()
    h2, l2 = share.get_legend_handles_labels()
    top.legend(h1 + h2, l1 + l2, loc="best", fontsize="small")
    bottom.legend(loc="best", fontsize="small")
    top.set_title(f"POST /v1/ask, {result['mode']} ({result['servers']} server(s), {result['cores']} cores)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------- main ---

def main():
    p = argparse.ArgumentParser(description="scripts/load-curve: read its header")
    p.add_argument("--mode", choices=["single", "cluster"], default="single")
    p.add_argument("--levels", default="1,2,4,8,16,32,64")
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--warmup", type=float, default=10.0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--dir")
    a = p.parse_args()
    try:
        levels = [int(v) for v in a.levels.split(",")]
    except ValueError:
        p.error("--levels: comma-separated integers")
    if not levels or any(v < 1 or v > 4096 for v in levels) or levels != sorted(set(levels)):
        p.error("--levels: rising integers from 1 to 4096")
    if not 1 <= a.duration <= 3600 or not 0 <= a.warmup <= 3600:
        p.error("--duration: 1 to 3600 s; --warmup: 0 to 3600 s")
    if a.duration != int(a.duration) or a.warmup != int(a.warmup):
        p.error("--duration and --warmup: whole seconds (wrk's -d)")
    if not GRACE:
        p.error("GRACE_BIN is not set (run scripts/load-curve, not this file)")
    work = a.dir or tempfile.mkdtemp(prefix="grace-load-curve-")
    os.makedirs(work, exist_ok=True)
    work = os.path.abspath(work)
    # PostgreSQL runs as its own user when this is root (scripts/cluster):
    # it must reach its folder inside this one (mkdtemp makes it 0700).
    os.chmod(work, 0o755)

    # SIGTERM and SIGHUP end the run as Ctrl-C does: through `finally`.
    def interrupted(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)

    system = Single(work) if a.mode == "single" else Cluster(work)
    try:
        say(f"starting the {a.mode} set in {work}")
        system.start()
        limit = system.servers * MAX_CONCURRENCY
        if a.warmup:
            # The first seconds fill each server's sentence-vector cache
            # (crates/grace-core/src/embed/cache/mod.rs): not measured.
            warm = min(8 * system.servers, MAX_CONCURRENCY * system.servers)
            say(f"warm-up: {int(a.warmup)} s at {warm} connections (not measured)")
            run_wrk(work, system.url, warm, int(a.warmup), "warm")
        rows = []
        for i, c in enumerate(levels):
            say(f"level {c}: wrk -t{min(c, 2)} -c{c} -d{int(a.duration)}s")
            row = level(system, work, c, int(a.duration), f"L{c}")
            rows.append(row)
            say(f"level {c}: {row['answered_per_s']} answered/s, p50 {fmt(row['p50_ms'])} ms, "
                f"p99 {fmt(row['p99_ms'])} ms, 429 {row['status_429']}, other {row['other_non_2xx']}, "
                f"socket errors {row['socket_errors']}, grace CPU "
                f"{fmt(row['cpu_ms_per_answered'].get('grace'), 1)} ms/answer")
            if i + 1 < len(levels):
                time.sleep(1)  # the last level's connections close
    except KeyboardInterrupt:
        say("interrupted: stopping what was started")
        raise SystemExit(130)
    finally:
        system.stop()

    result = {
        "mode": a.mode, "servers": system.servers, "cores": os.cpu_count(), "limit": limit,
        "max_concurrency": MAX_CONCURRENCY, "duration_s": int(a.duration), "warmup_s": int(a.warmup),
        "dir": work, "levels": rows, "bend": bend(rows), "shedding": shedding(rows, limit),
    }
    result["plot"] = plot(result, os.path.join(work, f"load-curve-{a.mode}.png"))
    with open(os.path.join(work, f"load-curve-{a.mode}.json"), "w") as f:
        json.dump(result, f, indent=1)
    if a.json:
        print(json.dumps(result))
    else:
        print(markdown(result))


if __name__ == "__main__":
    main()
