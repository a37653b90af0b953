"""Show a long `pip install -v` build as progress lines: reads pip's output on stdin, keeps it
all in a log file, and prints the compile step count (ninja's `[N/M]`) with the elapsed time
at most every 20 s, plus any error line. Used by scripts/install_local_llm.sh.

    pip install -v PKG 2>&1 | python scripts/build_progress.py LOG
"""

from __future__ import annotations

import re
import sys
import time

STEP = re.compile(r"\[(\d+)/(\d+)\]")


def main(log_path: str) -> None:
    t0 = last = time.monotonic()
    done = total = 0
    with open(log_path, "w") as log:
        for line in sys.stdin:
            log.write(line)
            now = time.monotonic()
            if m := STEP.search(line):
                done, total = int(m.group(1)), int(m.group(2))
            elif re.search(r"\berror\b|ERROR", line) and "warning" not in line.lower():
                print(f"  {line.rstrip()}", flush=True)
            if now - last >= 20:
                last = now
                _report(done, total, now - t0)
    _report(done, total, time.monotonic() - t0)


def _report(done: int, total: int, elapsed: float) -> None:
    step = f"{done}/{total} compile steps ({100 * done // total}%)" if total else "preparing"
    print(f"  llama-cpp-python: {step}, {int(elapsed) // 60}m{int(elapsed) % 60:02d}s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
