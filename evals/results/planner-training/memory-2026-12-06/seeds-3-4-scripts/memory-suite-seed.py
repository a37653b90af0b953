"""Write runs/memory-suite-seedN.yaml: evals/memory.yaml with only the arm polar-planner-memory and seed N."""
import sys
from pathlib import Path

import yaml

n = int(sys.argv[1])
suite = yaml.safe_load(Path("evals/memory.yaml").read_text())
arm = next(a for a in suite["agents"] if a["name"] == "polar-planner-memory")
arm["seeds"] = [n]
arm["seed_models"] = {k: v for k, v in arm["seed_models"].items() if k == n}
suite["agents"] = [arm]
Path(f"runs/memory-suite-seed{n}.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
