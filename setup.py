"""Map the repository's top-level folders into the single ``evigraph`` import namespace.

The user asked for ``agents/ tools/ graphs/ training/ corpora/`` at the repository root. Installed as-is
they would become bare top-level modules (``import tools``) that clash with other projects, so each folder
is installed as a subpackage of ``evigraph`` through setuptools' ``package_dir`` mapping. Subpackages are
discovered, so a new ``agents/<method>/`` folder needs no change here. Works for ``pip install .`` and for
``pip install -e .`` (setuptools' editable finder honours the mapping).
"""

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).parent
MAPPED_FOLDERS = ("agents", "tools", "graphs", "training", "corpora")


def _package_layout() -> tuple[list[str], dict[str, str]]:
    packages = ["evigraph", *(f"evigraph.{name}" for name in find_packages(str(ROOT / "evigraph")))]
    package_dir = {"evigraph": "evigraph"}
    for folder in MAPPED_FOLDERS:
        root_pkg = f"evigraph.{folder}"
        packages.append(root_pkg)
        package_dir[root_pkg] = folder
        for sub in find_packages(str(ROOT / folder)):
            packages.append(f"{root_pkg}.{sub}")
            package_dir[f"{root_pkg}.{sub}"] = f"{folder}/{sub.replace('.', '/')}"
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _package_layout()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
