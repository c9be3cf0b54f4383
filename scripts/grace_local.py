"""What the Python scripts that start a local `grace` share (scripts/soak.py,
scripts/load_curve.py, scripts/bench-large-folder, tests/support/faults.py):
a free loopback port, the configuration lines naming the repository's
models, waiting for `/health`, and stopping a server. Standard library
only."""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    """A loopback port nothing listens on (now)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def models_yaml():
    """grace_config.yml lines for the models scripts/setup installs in the repository."""
    models = os.path.join(ROOT, "models")
    return (
        f"embedding:\n  model_dir: \"{models}/minilm\"\n  runtime_path: \"{models}/libonnxruntime.so\"\n"
        f"reader:\n  model_dir: \"{models}/reader\"\n"
    )


def wait_health(url, seconds=60.0, alive=None):
    """Whether `url`/health answers 200 within `seconds`; gives up early
    when `alive` (a callable) says the server is gone."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except (OSError, urllib.error.URLError):
            pass
        if alive is not None and not alive():
            return False
        time.sleep(0.1)
    return False


def stop(proc, grace_seconds=30):
    """Stops a server started with subprocess.Popen: SIGTERM, then SIGKILL
    after `grace_seconds`."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
