"""Reports: files, contents, and report.html rendered by headless Chromium with its plots."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from polar.evals.report import load_results, render_report
from polar.evals.runner import run_suite

SUITE = {
    "name": "report-test",
    "description": "random play on two grids",
    "agents": [{"name": "random", "kind": "random"}],
    "harnesses": [
        {"id": "minigrid:MiniGrid-Empty-5x5-v0", "max_steps": 40},
        {"id": "minigrid:MiniGrid-DoorKey-5x5-v0", "max_steps": 30},
    ],
    "seeds": 2,
    "episodes": 4,
}

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    out = tmp_path_factory.mktemp("report")
    results = run_suite(SUITE, out, progress=False)
    return out, render_report(results, out)


def test_report_files(report: tuple[Path, dict[str, Path]]) -> None:
    out, paths = report
    for key in ("results", "markdown", "html", "success_plot", "curve_plot"):
        assert paths[key].is_file() and paths[key].stat().st_size > 0, key
    assert paths["success_plot"].read_bytes().startswith(PNG_MAGIC)
    data = json.loads(paths["results"].read_text())
    assert data["format"] == "polar.evals.results/1"
    assert {r["harness"] for r in data["rows"]} == {"Empty-5x5", "DoorKey-5x5"}
    again = load_results(out)
    assert again.rows == load_results(paths["results"]).rows
    md = paths["markdown"].read_text()
    assert "| random | DoorKey-5x5 | 0% [0, 32] |" in md  # 0/8 -> Wilson upper 32.4%
    assert "step-limit 8" in md


def test_html_is_self_contained(report: tuple[Path, dict[str, Path]]) -> None:
    _, paths = report
    html = paths["html"].read_text()
    srcs = re.findall(r'<img[^>]*src="([^"]+)"', html)
    assert len(srcs) == 2 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "http://" not in html and "https://" not in html


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed (scripts/install_system_deps.sh)")
def test_report_html_renders_in_headless_chromium(report: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    _, paths = report
    # A copy with a probe that writes each image's decoded width into the DOM after load;
    # --dump-dom then shows whether Chromium actually decoded the embedded PNGs.
    probe = tmp_path / "probe.html"
    probe.write_text(paths["html"].read_text().replace(
        "</body>",
        "<script>window.addEventListener('load', () => {document.body.setAttribute('data-imgs', "
        "Array.from(document.images).map(i => i.complete ? i.naturalWidth : -1).join(','));});"
        "</script></body>",
    ))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
    proc = subprocess.run([_chromium(), *flags, "--dump-dom", probe.as_uri()],
                          capture_output=True, text=True, timeout=120)
    m = re.search(r'data-imgs="([^"]*)"', proc.stdout)
    assert m, f"no probe output; chromium stderr: {proc.stderr[-2000:]}"
    widths = [int(w) for w in m.group(1).split(",")]
    assert len(widths) == 2 and all(w > 100 for w in widths), widths

    shot = tmp_path / "shot.png"
    subprocess.run([_chromium(), *flags, "--window-size=1200,1600", f"--screenshot={shot}",
                    paths["html"].as_uri()], capture_output=True, timeout=120)
    assert shot.read_bytes().startswith(PNG_MAGIC)
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.std() > 0.05  # not a blank page: tables and plots put ink on it
