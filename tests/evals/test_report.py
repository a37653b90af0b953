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
    # two random agents play the same seeded actions from the same env seeds: identical episodes
    "agents": [{"name": "random", "kind": "random"}, {"name": "random2", "kind": "random"}],
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
    assert data["format"] == "polar.evals.results/2"
    assert {r["harness"] for r in data["rows"]} == {"Empty-5x5", "DoorKey-5x5"}
    again = load_results(out)
    assert again.rows == load_results(paths["results"]).rows
    md = paths["markdown"].read_text()
    # 0/8 over 2 seeds: every resample is 0, so the interval is Wilson's for 0/8, [0, 0.3244]
    assert "| random | none | DoorKey-5x5 | 2 | 0% [0, 32] |" in md
    row = next(r for r in again.rows if r.agent == "random" and r.harness == "DoorKey-5x5")
    assert row.success_pooled.hi == pytest.approx(0.3244, abs=1e-3) and row.observes == "none"
    assert row.seed_success == {0: 0.0, 1: 0.0} and row.ledger.total == 0
    assert "step-limit 8" in md and "**observes**" in md and "## Cost ledger per agent" in md
    assert "one seed per task" not in md  # two seeds: the seed intervals mean something
    # identical agents: P(A > B) = 1/2 exactly and no discordant pair
    [cmp] = again.comparisons
    assert (cmp.a, cmp.b, cmp.same_information) == ("random", "random2", True)
    assert cmp.probability_of_improvement is not None and cmp.probability_of_improvement.value == 0.5
    assert all(p.a_only == p.b_only == 0 and p.p_value == 1.0 and p.pairs == 8 for p in cmp.paired)
    assert "[seed 0](episodes/random/DoorKey-5x5/seed-0.html)" in md


def test_one_seed_per_task_says_why_the_seed_intervals_have_zero_width(tmp_path: Path) -> None:
    suite = {**SUITE, "name": "one-seed", "seeds": 1, "harnesses": SUITE["harnesses"][:1]}
    paths = render_report(run_suite(suite, tmp_path, progress=False), tmp_path)
    md, page = paths["markdown"].read_text(), paths["html"].read_text()
    assert "**random, random2: one seed per task, so the intervals below that redraw seeds have zero width" in md
    assert "random, random2: one seed per task" in page
    aggregate = md.split("## Aggregate across tasks")[1]
    iqm = re.search(r"\| random \| 1 \| (\d+)% \[(\d+), (\d+)\] \|", aggregate)
    assert iqm is not None and iqm.group(1) == iqm.group(2) == iqm.group(3)  # the zero width it explains


def test_episode_pages(report: tuple[Path, dict[str, Path]]) -> None:
    from polar.evals.cells import CellResult
    from polar.evals.trace import decode_frames

    out, paths = report
    page = out / "episodes" / "random" / "DoorKey-5x5" / "seed-1.html"
    html = page.read_text()
    assert "href='../../../report.html'" in html and "id='ep-3'" in html
    assert 'href="episodes/random/DoorKey-5x5/seed-1.html"' in paths["html"].read_text()
    # the first episode of each cell keeps its trace: 30 steps (max_steps) plus the start frame
    cell = CellResult.model_validate_json((out / "cells" / "random" / "DoorKey-5x5" / "seed-1.json").read_text())
    trace = cell.episodes[0].extra["trace"]
    assert "trace" not in cell.episodes[1].extra
    frames = decode_frames(trace["frames"])
    assert len(frames) == 31 and len(trace["actions"]) == 30 and trace["steps"] == 30
    assert frames[0].startswith("WGWGWGWGWG") and "carrying: nothing" in frames[0]
    assert "Step trace" in html and trace["action_meanings"][0] == "left"


def test_pages_of_cells_no_longer_in_the_results_are_deleted(report: tuple[Path, dict[str, Path]]) -> None:
    """An agent removed from a suite leaves no page behind at the next report."""
    out, _ = report
    stale = out / "episodes" / "gone-agent" / "DoorKey-5x5" / "seed-0.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("<html>an old run</html>")
    render_report(load_results(out), out)
    assert not (out / "episodes" / "gone-agent").exists()
    assert (out / "episodes" / "random" / "DoorKey-5x5" / "seed-1.html").is_file()


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


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed (scripts/install_system_deps.sh)")
def test_episode_page_trace_runs_in_headless_chromium(report: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    out, _ = report
    page = out / "episodes" / "random" / "DoorKey-5x5" / "seed-0.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000"]
    proc = subprocess.run([_chromium(), *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                          timeout=120)
    # the script decoded the row deltas and shows the start frame under the slider
    assert "step 0 / 30: start" in proc.stdout, proc.stderr[-2000:]
    assert re.search(r"<pre>WGWGWGWGWG", proc.stdout)
