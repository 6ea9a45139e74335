"""Hyperscan ships wheels for Linux x86_64 and aarch64 only (pyproject installs it there alone), so
elsewhere the rules engine runs its literal prefilter plus ``regex`` and the scanner a ``re`` pass over
the same buffers. Both fallbacks run here in a process where ``import hyperscan`` fails, and must give
what the Hyperscan path gives: the same diagnoses of real verl output and the same scan report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.scan_jobdir import VERL_RUNS, build_cascade_job, build_drift_job

_PROBE = r"""
import json, sys
if sys.argv[1] == "absent":
    sys.modules["hyperscan"] = None  # `import hyperscan` raises ImportError, as on a platform without the wheel
from pathlib import Path
import indexer
from kb.scan.runner import scan_database, scan_paths

diagnoser = indexer.load_diagnoser(semantic=False, issues=False)
texts = json.loads(Path(sys.argv[2]).read_text())
out = {
    "engines": [diagnoser.rules.patterns.engine, scan_database(diagnoser).engine],
    "diagnoses": [
        [(m.id, m.confidence, m.verdict, [e.line_no for e in m.evidence]) for m in diagnoser.diagnose(t, top=5).matches]
        for t in texts
    ],
    "scans": [],
}
for job in sys.argv[3:]:
    report = json.loads(scan_paths([Path(job)], diagnoser, workers=1).model_dump_json())
    report.pop("stats")
    out["scans"].append(report)
print(json.dumps(out))
"""


def _probe(mode: str, texts: Path, jobs: list[Path]) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, mode, str(texts), *map(str, jobs)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], dict[str, object]]:
    pytest.importorskip("hyperscan")
    root = tmp_path_factory.mktemp("jobs")
    runs = sorted(p for p in VERL_RUNS.iterdir() if (p / "output.log").is_file())
    texts = root / "texts.json"
    texts.write_text(json.dumps([(p / "output.log").read_text(encoding="utf-8", errors="replace") for p in runs]))
    real = root / "real"
    real.mkdir()
    (real / "main_ppo.log").write_bytes((runs[0] / "output.log").read_bytes())
    jobs = [build_cascade_job(root / "cascade"), build_drift_job(root / "drift"), real]
    return _probe("present", texts, jobs), _probe("absent", texts, jobs)


def test_the_fallbacks_run_when_hyperscan_is_absent(both: tuple[dict[str, object], dict[str, object]]) -> None:
    present, absent = both
    assert present["engines"] == ["hyperscan", "hyperscan"]
    assert absent["engines"] == ["prefilter", "re"]


def test_without_hyperscan_real_verl_output_is_diagnosed_the_same(
    both: tuple[dict[str, object], dict[str, object]],
) -> None:
    present, absent = both
    diagnoses = present["diagnoses"]
    assert isinstance(diagnoses, list) and len(diagnoses) >= 10 and any(diagnoses)
    assert absent["diagnoses"] == diagnoses


def test_without_hyperscan_a_job_scans_to_the_same_report(both: tuple[dict[str, object], dict[str, object]]) -> None:
    present, absent = both
    scans = present["scans"]
    assert isinstance(scans, list) and all(s["findings"] for s in scans)
    assert absent["scans"] == scans
