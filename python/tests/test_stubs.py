"""The type stubs name exactly the options the C++ commands take (so an editor completes every one
and none that does not exist), and every public function has a docstring."""
import ast
import pathlib

import cplab
from cplab import _commands

STUB = pathlib.Path(cplab.__file__).with_name("__init__.pyi")
FILES = {"q", "k", "v", "do", "out-dir", "trace", "chrome-trace", "plan-only", "json", "help", "sink-logits", "kv-cache",
         "cache-layout", "inputs", "outputs", "out"}


def _kwonly(name):
    tree = ast.parse(STUB.read_text())
    f = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return {a.arg.replace("_", "-") for a in f.args.kwonlyargs}


def test_stub_keywords_are_the_command_options():
    for name in ("run", "check"):
        known, _ = _commands.options(name)
        assert _kwonly(name) == set(known) - FILES, name


def test_docstrings():
    for f in (cplab.run, cplab.check, cplab.layout, cplab.schedule, cplab.plan, cplab.testing.assert_cp_equivalent,
              cplab.gemm_backend):
        assert f.__doc__ and len(f.__doc__) > 80, f.__name__
