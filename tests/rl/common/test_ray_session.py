"""`init_ray`: a lean, quiet local Ray (no dashboard, no banner), started once per process."""

import json
import subprocess
import sys

SCRIPT = """
import json
import psutil
from polar.rl.common.ray_session import init_ray
assert init_ray(num_cpus=1) is True
assert init_ray(num_cpus=1) is False  # once per process
import ray
names = [" ".join(p.cmdline()) for p in psutil.Process().children(recursive=True)]
print(json.dumps({"dashboard": any("--disable-frontend" not in n and "dashboard.py" in n for n in names),
                  "tasks": ray.get(ray.remote(lambda: 1).remote())}))
ray.shutdown()
"""


def test_init_ray_is_lean_and_quiet():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"dashboard": False, "tasks": 1}
    assert "Token authentication" not in r.stderr and "Started a local Ray instance" not in r.stderr
