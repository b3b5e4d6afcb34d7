"""report.html: one self-contained page per report folder, rebuilt by `cotplan report DIR`, that
opens offline (checked in headless Chromium where one is installed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cotplan.charts.report_page import build_report_page
from cotplan.cli import app
from cotplan.errors import InputError
from cotplan.planner.run import SavedPlan

runner = CliRunner()
FIXTURE = Path(__file__).parent / "data" / "calibration_three_sizes.csv"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome-headless-shell")


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plan folder: `cotplan plan` on the three-size calibration."""
    folder = tmp_path_factory.mktemp("plan")
    shutil.copyfile(FIXTURE, folder / "calibration.csv")
    result = runner.invoke(
        app,
        ["plan", "--calibration", str(folder / "calibration.csv"), "--eps", "0.2",
         "--n", "4,8,16,32", "--bootstrap", "10"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return folder


def test_plan_writes_a_page_with_the_caps_first_and_its_charts(planned: Path) -> None:
    page = (planned / "report.html").read_text(encoding="utf-8")
    saved = SavedPlan.load(planned / "plan.json")
    answer = page[page.index('<section class="answer">') : page.index("</section>")]
    for n in (4, 8, 16, 32):
        cap = saved.cap(n)
        certified = "yes" if cap.certified else "no"
        assert f'<tr><td>{n}</td><td>{cap.tokens}</td><td class="text">{certified}</td>' in answer
    # The answer, then the charts, then the statistics.
    assert page.index("Reasoning caps") < page.index("<h2>Charts") < page.index("<h2>Statistics")
    assert page.count("<svg") >= 2
    # Nothing to fetch: no script, no stylesheet or image from elsewhere.
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    manifest = json.loads((planned / "manifest.json").read_text(encoding="utf-8"))
    assert "report.html" in manifest["files"]
    assert manifest["command"] == "plan"


def test_cotplan_report_rebuilds_the_page(planned: Path) -> None:
    before = (planned / "report.html").read_text(encoding="utf-8")
    (planned / "report.html").unlink()
    result = runner.invoke(app, ["report", str(planned)])
    assert result.exit_code == 0, result.output
    assert (planned / "report.html").read_text(encoding="utf-8") == before


def test_a_folder_with_nothing_to_report_is_refused(tmp_path: Path) -> None:
    refused = r"`folder`: .* holds no calibration, plan, run, demo, cost or monitor"
    with pytest.raises(InputError, match=refused):
        build_report_page(tmp_path)
    with pytest.raises(InputError, match=r"`folder`: .* is not a folder"):
        build_report_page(tmp_path / "none")


def open_in_browser(page: Path, tmp_path: Path) -> str:
    """The DOM headless Chromium rendered from `page` with no network at all (skips where no
    browser is installed); fails on a script error or a page that rendered nearly blank."""
    browser = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    if browser is None:
        pytest.skip(f"no headless browser installed (looked for {', '.join(BROWSERS)})")
    # A proxy that refuses every connection: the page must render with no network at all.
    command = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
        "--proxy-server=127.0.0.1:9", f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={tmp_path / 'page.png'}", "--window-size=1200,2400",
        page.resolve().as_uri(),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    dom = subprocess.run(
        [*command[:-3], "--dump-dom", command[-1]],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert dom.returncode == 0, dom.stderr
    for said in (done.stderr, dom.stderr):  # the console's errors, logged to stderr
        assert "Uncaught" not in said, said
        assert "ERR_PROXY" not in said, said  # nothing was fetched (through the dead proxy)
    # A rendered page with charts is far from blank: the screenshot has many colours.
    assert (tmp_path / "page.png").stat().st_size > 20_000
    return dom.stdout


def test_a_calibration_folder_gets_a_page_that_opens_offline(tmp_path: Path) -> None:
    """As `calibrate` ends: its tables committed to the folder, then the page added."""
    from cotplan.cli.report_page import add_report_page
    from cotplan.io.reports import ReportFolder

    folder = tmp_path / "calibration"
    staged = ReportFolder.start(folder, command="calibrate")
    with staged:
        shutil.copyfile(FIXTURE, staged.path / "calibration.csv")
        staged.commit()
    written = add_report_page(folder, command="calibrate")
    assert written == folder / "report.html"
    page = written.read_text(encoding="utf-8")
    assert "<title>cotplan calibrate: calibration</title>" in page
    answer = page[page.index('<section class="answer">') : page.index("</section>")]
    assert "accuracy (mean reasoning tokens) by budget" in answer
    dom = open_in_browser(written, tmp_path)
    assert dom.count("<svg") >= 1  # error against budget per size
    assert "accuracy (mean reasoning tokens) by budget" in dom


def test_the_page_opens_offline_in_a_real_browser(planned: Path, tmp_path: Path) -> None:
    dom = open_in_browser(planned / "report.html", tmp_path)
    assert dom.count("<svg") >= 2  # the charts are in the rendered page
    assert "Reasoning caps for error ≤ 0.2" in dom
