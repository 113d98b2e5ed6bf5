"""conftest.py: fixtures of the Python binding's tests.

cli: the `cplab` command built from the same sources (CPLAB_CLI, else build/app/cplab beside this
checkout, else `cplab` on PATH); the tests that compare the binding with it are skipped, by name,
when none is there. scripts/test.sh sets CPLAB_CLI, so in CI they always run.
"""
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _find_cli():
    env = os.environ.get("CPLAB_CLI")
    if env:
        return env
    built = ROOT / "build" / "app" / "cplab"
    if built.exists():
        return str(built)
    return shutil.which("cplab")


def cli_args(options):
    """The command line's words for keyword options, as the binding spells them (python/cplab/_options.py):
    True a flag, a list joined by commas, "_" as "-"."""
    out = []
    for k, v in options.items():
        if v is True:
            out.append("--" + k.replace("_", "-"))
        elif isinstance(v, (list, tuple)):
            out += ["--" + k.replace("_", "-"), ",".join(map(str, v))]
        else:
            out += ["--" + k.replace("_", "-"), str(v)]
    return out


@pytest.fixture(scope="session")
def cli():
    path = _find_cli()
    if not path:
        pytest.skip("the cplab command is not built (set CPLAB_CLI, or build build/app/cplab)")

    def run(*args, check=True):
        p = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        if check and p.returncode not in (0, 1):
            raise AssertionError(f"cplab {' '.join(map(str, args))} exited {p.returncode}: {p.stderr}")
        return p

    run.path = path
    return run
