"""`requirements.txt` under the installer Streamlit Community Cloud uses (uv), offline.

Community Cloud installs `requirements.txt` with uv. uv searches an extra index *before* PyPI and
takes every version of a package from the first index that has it. PyPI's own torch for Linux is
the CUDA build (~2.5 GB), so the file must point at PyTorch's CPU wheels somehow, but PyTorch's
index also carries copies of common packages (requests, numpy, pillow, jinja2, ...) at whatever
versions PyTorch once uploaded. Named as an extra index, it would make uv install those copies, an
environment the tests never ran; a hosting log would show nothing wrong.

The file therefore names only PyTorch's *torch* page, as a link page (`--find-links`): uv and pip
take the CPU torch from it and everything else from PyPI. These tests build two small indexes on
disk (a "PyPI" and a "PyTorch index" that also holds an old `requests`), out of empty wheels, and
ask uv to resolve the project's own index lines against them, with no network.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
PYTORCH_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_PAGE = PYTORCH_INDEX + "/torch/"  # the index's page of torch wheels


def _requirement_lines(path: Path) -> list[str]:
    """The file's lines without comments and blanks."""
    lines = (line.split(" #")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _wheel(folder: Path, name: str, version: str) -> Path:
    """An empty wheel: just enough metadata for a resolver (no code, no dependencies)."""
    dist = f"{name}-{version}"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    files = {
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    with zipfile.ZipFile(path, "w") as zf:
        for arcname, text in files.items():
            data = text.encode()
            zf.writestr(arcname, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arcname},sha256={digest},{len(data)}")
        record.append(f"{dist}.dist-info/RECORD,,")
        zf.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def _simple_index(root: Path, wheels: dict[str, list[str]]) -> Path:
    """A PEP 503 index in `root` (one page per project), its wheels beside the pages."""
    root.mkdir(parents=True)
    for name, versions in wheels.items():
        page = root / name
        page.mkdir()
        links = [_wheel(page, name, version).name for version in versions]
        page.joinpath("index.html").write_text(
            "".join(f'<a href="{link.replace("+", "%2B")}">{link}</a>\n' for link in links))
    return root


def _resolve(uv: str, tmp_path: Path, index_lines: list[str]) -> dict[str, str]:
    """What uv would install for torch and requests, given these index lines, offline."""
    pypi = _simple_index(tmp_path / "pypi", {"torch": ["2.13.0"], "requests": ["2.28.1", "2.34.2"]})
    pytorch = _simple_index(tmp_path / "pytorch", {"torch": ["2.13.0+cpu"], "requests": ["2.28.1"]})
    local = [line.replace(TORCH_PAGE, (pytorch / "torch").as_uri() + "/")
                 .replace(PYTORCH_INDEX, pytorch.as_uri())
             for line in index_lines]
    req = tmp_path / "requirements.in"
    req.write_text("\n".join(local + ['torch==2.13.0+cpu ; sys_platform == "linux"', "requests"]) + "\n")
    done = subprocess.run(
        [uv, "pip", "compile", str(req), "--no-config", "--no-cache", "--offline", "--quiet",
         "--no-header", "--no-annotate", "--python-platform", "linux", "--python-version", "3.12",
         "--index-url", pypi.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(re.findall(r"^(torch|requests)==(\S+)", done.stdout, flags=re.M))


@pytest.fixture(scope="module")
def uv() -> str:
    path = shutil.which("uv")
    assert path, "uv is in requirements-dev.txt; install it (pip install -r requirements-dev.txt)"
    return path


def test_requirements_name_no_index_beside_pypi_and_the_cpu_torch_page_as_links():
    lines = _requirement_lines(REQUIREMENTS)
    options = [line for line in lines if line.startswith("-")]
    assert options == [f"--find-links {TORCH_PAGE}"], options
    torch = [line for line in lines if line.startswith("torch")]
    assert 'torch==2.13.0+cpu ; sys_platform == "linux"' in torch, torch


def test_with_the_projects_lines_uv_takes_the_cpu_torch_and_the_newest_requests(uv, tmp_path):
    index_lines = [line for line in _requirement_lines(REQUIREMENTS) if line.startswith("-")]
    assert _resolve(uv, tmp_path, index_lines) == {"torch": "2.13.0+cpu", "requests": "2.34.2"}


def test_an_extra_index_would_have_given_pytorchs_old_copy_of_requests(uv, tmp_path):
    """The check above can fail: PyTorch's index named as an extra index shadows PyPI under uv."""
    assert _resolve(uv, tmp_path, [f"--extra-index-url {PYTORCH_INDEX}"]) == {"torch": "2.13.0+cpu", "requests": "2.28.1"}
