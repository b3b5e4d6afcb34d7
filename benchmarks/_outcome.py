"""How a benchmark ends: its targets and checks judged, its transcript kept, an exit status.

    with Outcome("backend_overhead") as outcome:
        ...  # print as usual (print or rich)
        outcome.target("cotplan within 5% of the raw SDK", overhead <= 0.05, f"{overhead:+.1%}")
        outcome.check("results identical through faults", same)

Everything the benchmark prints is also written to ``benchmarks/results/<name>.txt`` (with the
command line, date, load and core count on top; ``<name>_<arguments>.txt`` when it ran with
arguments), whether it ends well or not; a run that ends with an error or Ctrl-C, where a
transcript is already kept, writes beside it (``<name>.unfinished.txt``, ignored by git) rather
than over the finished one. The exit status is 1 when a stated target was missed or a check
inside the benchmark failed, so a script or CI step cannot read MISSED and carry on.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TextIO

__all__ = ["RESULTS", "Outcome"]

RESULTS = Path(__file__).resolve().parent / "results"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: The longest argument slug a transcript name keeps whole (a longer one is cut and hashed).
_SLUG_LENGTH = 80


class _Tee:
    """Writes to the terminal and keeps a copy."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False  # rich then prints plain text, readable in the transcript

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


class Outcome:
    """Collects a benchmark's targets and checks; see the module docstring."""

    def __init__(self, name: str, *, transcript: Path | None = None) -> None:
        self.name = name
        self.arguments = sys.argv[1:]
        self.transcript = transcript or RESULTS / f"{name}{_slug(self.arguments)}.txt"
        self.failures: list[str] = []
        self.lines: list[str] = []
        self._tee: _Tee | None = None

    def target(self, what: str, met: bool, measured: str = "") -> bool:
        """A target the benchmark states (its docstring says which); missing it fails the run."""
        return self._judge("target", what, met, measured, ("met", "MISSED"))

    def check(self, what: str, ok: bool, detail: str = "") -> bool:
        """A correctness check inside the benchmark; a failure fails the run."""
        return self._judge("check", what, ok, detail, ("ok", "FAILED"))

    def note(self, text: str) -> None:
        """A line for the summary that judges nothing (e.g. why a target did not apply)."""
        self.lines.append(f"note: {text}")

    def _judge(self, kind: str, what: str, ok: bool, detail: str, words: tuple[str, str]) -> bool:
        line = f"{kind}: {what}: {words[0] if ok else words[1]}"
        line += f" ({detail})" if detail else ""
        self.lines.append(line)
        if not ok:
            self.failures.append(line)
        return ok

    def __enter__(self) -> Outcome:
        self._tee = _Tee(sys.stdout)
        sys.stdout = self._tee
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        assert self._tee is not None
        if error is None and self.lines:
            print("\n" + "\n".join(self.lines))
        if error is None:
            verdict = "FAILED" if self.failures else "passed"
            print(f"{self.name}: {verdict} ({len(self.failures)} of {len(self.lines)} missed)")
        sys.stdout = self._tee.stream
        saved = self._save(self._tee.parts, error)
        print(f"transcript: {_shown(saved)}")
        if error is None and self.failures:
            raise SystemExit(1)

    def _save(self, parts: list[str], error: BaseException | None) -> Path:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else ""
        command = " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *self.arguments])
        header = [
            f"$ {command}",
            f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, load {load}",
        ]
        if error is not None:
            header.append(f"# ended with {type(error).__name__}: {error}")
        path = self.transcript
        if error is not None and path.exists():
            # A run cut short must not replace the finished run's record the docs cite.
            path = path.with_name(f"{path.stem}.unfinished.txt")
        path.parent.mkdir(parents=True, exist_ok=True)
        text = _ANSI.sub("", "".join(parts))  # colours of a console made before the tee
        path.write_text("\n".join(header) + "\n" + text)
        return path


def _slug(arguments: list[str]) -> str:
    if not arguments:
        return ""
    # Paths in the arguments are named by their last part only (no machine's folders).
    words = [(Path(a).name if os.sep in a else a).lstrip("-") for a in arguments]
    slug = re.sub(r"[^A-Za-z0-9._=]+", "-", "_".join(words)).strip("-_")
    if len(slug) <= _SLUG_LENGTH:
        return "_" + slug
    # Cut, two runs whose arguments differ only at the end would share a transcript and the
    # second would overwrite the first: a digest of the whole slug keeps them apart.
    digest = hashlib.sha256(slug.encode()).hexdigest()[:8]
    return "_" + slug[: _SLUG_LENGTH - 9] + "-" + digest


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
