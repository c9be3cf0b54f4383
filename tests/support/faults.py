#!/usr/bin/env python3
"""Fault scenarios for tests/faults.rs, run inside a private mount
namespace (`unshare -rm`) so that each can mount its own tmpfs or
read-only folder without touching the machine's:

    unshare -rm python3 tests/support/faults.py disk-full GRACE WORK
    unshare -rm python3 tests/support/faults.py read-only GRACE WORK
    python3 tests/support/faults.py clock-jump GRACE WORK LIBFAKETIME
    python3 tests/support/faults.py restart GRACE WORK

Each drives the real `grace` binary (GRACE) in the folder WORK and prints
one JSON object of what it observed; the Rust test asserts on it. Standard
library only."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from grace_local import free_port, models_yaml, wait_health  # noqa: E402
MIB = 1 << 20


def config(work, data, extra=""):
    with open(os.path.join(work, "grace_config.yml"), "w") as f:
        f.write(
            models_yaml()
            + f"storage:\n  data_dir: \"{data}\"\n  min_free_mb: 8\n"
            f"ingest:\n  allowed_roots: [\"{work}/docs\"]\n" + extra
        )


def call(method, url, body=None, token=None):
    """(status, parsed body) of a request; never raises on an HTTP error."""
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(path, name, leave):
    """A file that leaves `leave` bytes free on path's disk."""
    size = free_bytes(path) - leave
    with open(os.path.join(path, name), "wb") as f:
        if size > 0:
            os.posix_fallocate(f.fileno(), 0, size)


def grace(bin_, work, *args):
    out = subprocess.run([bin_, *args], cwd=work, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=300)
    return {"rc": out.returncode, "stdout": out.stdout, "stderr": out.stderr.strip()[-1500:]}


def serve(bin_, work, env=None):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(os.path.join(work, "serve.log"), "a")
    proc = subprocess.Popen([bin_, "serve", "--bind", f"127.0.0.1:{port}"], cwd=work,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                            env={**os.environ, **(env or {})})
    if wait_health(url, 60, alive=lambda: proc.poll() is None):
        return proc, url
    proc.kill()
    raise SystemExit(f"faults: grace serve did not start: {open(os.path.join(work, 'serve.log')).read()[-2000:]}")


def disk_full(bin_, work):
    """A server whose data folder (a 256 MiB tmpfs) fills up: an ingest and
    a reviewer's answer on the full disk, then the same once space returns."""
    data = os.path.join(work, "data")
    os.makedirs(data)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", data], check=True)
    docs = os.path.join(work, "docs")
    shutil.copytree(os.path.join(ROOT, "examples", "kb"), os.path.join(docs, "a"))
    shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "formats"), os.path.join(docs, "b"))
    config(work, data)
    seen = {}
    proc, url = serve(bin_, work)
    try:
        seen["first_ingest"] = call("POST", url + "/v1/ingest", {"paths": [f"{docs}/a"]})[0]
        status, body = call("POST", url + "/v1/ask", {"question": "Can I deploy on Fridays?"})
        seen["ask"] = status
        review_id = (body or {}).get("review_id")
        seen["escalated"] = review_id is not None
        reg = grace(bin_, work, "--json", "review", "register", "ann", "--name", "Ann")
        token = json.loads(reg["stdout"])["token"]
        claim = call("POST", f"{url}/v1/review/escalations/{review_id}/claim", {}, token)
        seen["claim"] = claim[0]

        # An edited file in the next ingest: its old text must survive a
        # refused write (the old chunks are deleted only once the new ones
        # have room).
        oncall = os.path.join(docs, "a", "oncall.txt")
        with open(oncall) as f:
            text = f.read()
        with open(oncall, "w") as f:
            f.write(text.replace("Europe/Berlin", "Pacific/Auckland"))
        # Less free than storage.min_free_mb (8 MiB): the store refuses the
        # write before it is made; the manifest (small) is still written.
        fill(data, "filler-1", 6 * MIB)
        status, body = call("POST", url + "/v1/ingest", {"paths": [f"{docs}/a", f"{docs}/b"]})
        seen["ingest_low_space"] = [status, body]
        status, body = call("POST", url + "/v1/search", {"query": "on-call rotation time zone Berlin", "limit": 3})
        seen["old_text_kept"] = any("Europe/Berlin" in p.get("text", "") for p in (body or {}).get("passages", []))
        # Nothing free at all: the manifest cannot be written either, nor
        # the reviewer's answer.
        fill(data, "filler-2", 0)
        status, body = call("POST", url + "/v1/ingest", {"paths": [f"{docs}/b"]})
        seen["ingest_no_space"] = [status, body]
        status, body = call("POST", f"{url}/v1/review/escalations/{review_id}/answer",
                            {"text": "It is blue, as the survey says."}, token)
        seen["answer_no_space"] = [status, body]
        seen["health_when_full"] = call("GET", url + "/health")[0]
        seen["search_when_full"] = call("POST", url + "/v1/search", {"query": "install", "limit": 1})[0]
        # An ask writes too (the audit log, its session, an escalation):
        # answered, or refused as 507, never a crash or a 500.
        seen["ask_when_full"] = call("POST", url + "/v1/ask", {"question": "How do I rotate an API key?"})[0]

        # Space returns: the same calls complete, with nothing lost or twice.
        os.remove(os.path.join(data, "filler-1"))
        os.remove(os.path.join(data, "filler-2"))
        status, body = call("POST", url + "/v1/ingest", {"paths": [f"{docs}/a", f"{docs}/b"]})
        seen["ingest_after"] = [status, {k: (body or {}).get(k) for k in ("added", "updated", "unchanged", "skipped", "points_total")}]
        status, body = call("POST", url + "/v1/search", {"query": "on-call rotation time zone Auckland", "limit": 3})
        seen["new_text_in"] = any("Pacific/Auckland" in p.get("text", "") for p in (body or {}).get("passages", []))
        seen["ask_when_back"] = call("POST", url + "/v1/ask", {"question": "How do I rotate an API key?"})[0]
        if seen["answer_no_space"][0] != 200:
            status, body = call("POST", f"{url}/v1/review/escalations/{review_id}/answer",
                                {"text": "It is blue, as the survey says."}, token)
            seen["answer_after"] = status
        status, body = call("GET", f"{url}/v1/review/escalations/{review_id}/log", token=token)
        entries = body if isinstance(body, list) else (body or {}).get("entries", [])
        seen["answers_logged"] = sum(1 for e in entries if e.get("action") == "answered")
        seen["escalation_status"] = call("GET", f"{url}/v1/review/escalations/{review_id}", token=token)[1].get("status")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    seen["server_exit"] = proc.returncode
    # The knowledge base equals a clean ingest of the same files.
    clean = os.path.join(work, "clean")
    os.makedirs(clean)
    with open(os.path.join(clean, "grace_config.yml"), "w") as f:
        f.write(open(os.path.join(work, "grace_config.yml")).read().replace(data, os.path.join(clean, "data")))
    out = grace(bin_, clean, "ingest", f"{docs}/a", f"{docs}/b", "--json")
    seen["clean_points"] = json.loads(out["stdout"])["points_total"] if out["rc"] == 0 else out
    seen["manifest_equal"] = manifest_view(data) == manifest_view(os.path.join(clean, "data"))
    seen["doctor"] = grace(bin_, work, "doctor", "--json")
    print(json.dumps(seen))


def manifest_view(data):
    with open(os.path.join(data, "manifests", "grace.json")) as f:
        m = json.load(f)
    return sorted((s, e["content_hash"], len(e["point_ids"]), e["state"]) for s, e in m["sources"].items())


def read_only(bin_, work):
    """A data folder that cannot be written (a read-only bind mount: even
    root cannot write it)."""
    data = os.path.join(work, "data")
    os.makedirs(os.path.join(work, "docs"))
    shutil.copytree(os.path.join(ROOT, "examples", "kb"), os.path.join(work, "docs", "a"))
    config(work, data)
    seen = {"ingest": grace(bin_, work, "ingest", f"{work}/docs/a")["rc"]}
    subprocess.run(["mount", "--bind", data, data], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", data], check=True)
    seen["serve"] = grace(bin_, work, "serve", "--bind", f"127.0.0.1:{free_port()}")
    seen["ingest_ro"] = grace(bin_, work, "ingest", f"{work}/docs/a")
    seen["ask_ro"] = grace(bin_, work, "ask", "How do I install it?", "--json")
    print(json.dumps(seen))


def clock_jump(bin_, work, faketime):
    """A server whose wall clock jumps 2 hours forward, then 3 back, while an
    escalation with 8 seconds to live is open (libfaketime reads the offset
    from a file at every call; the monotonic and boot clocks are left
    alone, as a real jump leaves them)."""
    ttl = 8.0
    data = os.path.join(work, "data")
    os.makedirs(os.path.join(work, "docs"))
    shutil.copytree(os.path.join(ROOT, "examples", "kb"), os.path.join(work, "docs", "a"))
    config(work, data, f"review:\n  escalation_ttl_seconds: {ttl}\n")
    seen = {"ingest": grace(bin_, work, "ingest", f"{work}/docs/a")["rc"]}
    token = json.loads(grace(bin_, work, "--json", "review", "register", "ann", "--name", "Ann")["stdout"])["token"]
    offset = os.path.join(work, "faketime")
    with open(offset, "w") as f:
        f.write("+0\n")
    env = {"LD_PRELOAD": faketime, "FAKETIME_TIMESTAMP_FILE": offset, "FAKETIME_NO_CACHE": "1",
           "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    proc, url = serve(bin_, work, env)
    try:
        t0 = time.monotonic()
        status, body = call("POST", url + "/v1/ask", {"question": "Can I deploy on Fridays?"})
        review_id = (body or {}).get("review_id")
        seen["escalated"] = review_id is not None

        def look():
            status, e = call("GET", f"{url}/v1/review/escalations/{review_id}", token=token)
            return {"at": round(time.monotonic() - t0, 2), "http": status, "status": (e or {}).get("status"),
                    "expires_at": (e or {}).get("expires_at")}

        seen["before"] = look()
        for name, jump in [("after_forward_2h", "+2h"), ("after_back_to_minus_1h", "-1h")]:
            with open(offset, "w") as f:
                f.write(jump + "\n")
            time.sleep(0.5)
            seen[name] = look()
        # Until expiry by elapsed time: it expires within about a second of
        # its 8 seconds, not 2 hours early nor an hour late.
        while time.monotonic() - t0 < ttl + 5:
            got = look()
            if got["status"] != "pending":
                break
            time.sleep(0.2)
        seen["settled"] = got
        seen["ttl"] = ttl
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    log = open(os.path.join(work, "serve.log")).read()
    seen["jumps_logged"] = log.count("the system clock jumped")
    print(json.dumps(seen))


def restart(bin_, work):
    """A server stopped and started again keeps its sentence vectors (the
    vector cache, saved when it stops and every 30 s), and a damaged cache
    file is a warning at start, not a failure."""
    data = os.path.join(work, "data")
    os.makedirs(os.path.join(work, "docs"))
    shutil.copytree(os.path.join(ROOT, "examples", "kb"), os.path.join(work, "docs", "a"))
    config(work, data)
    seen = {"ingest": grace(bin_, work, "ingest", f"{work}/docs/a")["rc"]}
    cache = os.path.join(data, "vector-cache", "grace.bin")
    env = {"RUST_LOG": "info,qdrant_edge=error,pdf_oxide=off", "NO_COLOR": "1"}
    log = os.path.join(work, "serve.log")

    def run_once(key):
        start = os.path.getsize(log) if os.path.exists(log) else 0
        proc, url = serve(bin_, work, env)
        try:
            status, _ = call("POST", url + "/v1/ask", {"question": "How do I install it?"})
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        with open(log) as f:
            text = f.read()[start:]
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
        loaded = re.search(r"vector cache loaded vectors=(\d+)", text)
        seen[key] = {"ask": status, "loaded": int(loaded.group(1)) if loaded else None,
                     "refused": "the vector cache starts empty" in text,
                     "cache_bytes": os.path.getsize(cache) if os.path.exists(cache) else 0}

    run_once("first")
    run_once("second")
    with open(cache, "r+b") as f:
        f.seek(100)
        f.write(b"damage")
    run_once("damaged")
    print(json.dumps(seen))


if __name__ == "__main__":
    what, bin_, work = sys.argv[1:4]
    if what == "clock-jump":
        clock_jump(bin_, os.path.abspath(work), sys.argv[4])
    else:
        {"disk-full": disk_full, "read-only": read_only, "restart": restart}[what](bin_, os.path.abspath(work))
