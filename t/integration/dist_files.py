#!/usr/bin/env python3
"""Every test `make check` knows has its files in the source tree it runs from.

distcheck's plain build runs only DISTCHECK_TESTS (Makefile.am: the unit tests and a few
integration tests), so this test stands in for running the others there: for each test in
LF_ALL_TESTS (the whole TESTS list), the script is present under $LF_SRCDIR, each module it
imports is either found beside it or installed (and the helpers found beside it are checked
the same way, in turn), each server script it names ("s3_standin.py") is beside it, and
each file a shell test sources or names as "$LF_SRCDIR/..." is present.
A helper missing from EXTRA_DIST fails here, in distcheck, instead of on a user's machine.

The unit tests are programs built by `make check` itself; a missing source fails their build."""
import ast
import importlib.util
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

# A helper must be found beside the test that imports it, not beside this script.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(
    os.path.abspath(__file__))]
SRCDIR = os.environ.get("LF_SRCDIR", ".")
# "$LF_SRCDIR/a/b", "${LF_SRCDIR}/a/b" or "${LF_SRCDIR:-.}/a/b" in a shell script.
SRC_PATH = re.compile(r'\$\{?LF_SRCDIR(?::-[^}]*)?\}?/([A-Za-z0-9_./-]+)')
SCRIPT_NAME = re.compile(r'^[a-z0-9_]+_[a-z0-9_]+\.py$')


def imported(path):
    """The modules a Python file imports at its top level (imports inside try: may be
    optional, so they are left out)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return names


def started(path):
    """The scripts a Python file names by a bare file name, e.g. "s3_standin.py", which it
    starts as servers from its own directory."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    return sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                   and isinstance(n.value, str) and SCRIPT_NAME.match(n.value)})


def missing_for_python(path, seen):
    """What `path` needs and the tree lacks, following the helpers found beside it."""
    here = os.path.dirname(path)
    missing = [f"{os.path.relpath(path, SRCDIR)} starts {name}: not beside it"
               for name in started(path) if not os.path.exists(os.path.join(here, name))]
    for name in imported(path):
        local = os.path.join(here, name + ".py")
        if os.path.exists(local):
            if local not in seen:
                seen.add(local)
                missing += missing_for_python(local, seen)
        elif name not in sys.builtin_module_names and importlib.util.find_spec(name) is None:
            missing.append(f"{os.path.relpath(path, SRCDIR)} imports {name}: not beside it, "
                           "not installed")
    return missing


def missing_for_shell(path):
    """The files a shell test names under $LF_SRCDIR that the tree lacks."""
    with open(path) as f:
        text = f.read()
    return [f"{os.path.relpath(path, SRCDIR)} names $LF_SRCDIR/{rel}: absent"
            for rel in sorted(set(SRC_PATH.findall(text)))
            if not os.path.exists(os.path.join(SRCDIR, rel.rstrip("/.")))]


def main():
    c = tt.Checks()
    tests = os.environ.get("LF_ALL_TESTS", "").split()
    scripts = [t for t in tests if t.endswith((".py", ".sh"))]
    if len(scripts) < 100:
        # `make check TESTS=...` makes LF_ALL_TESTS that short list too (Makefile.am): there
        # is no whole list to check. Alone, pass it: make check TESTS=t/integration/
        # dist_files.py LF_ALL_TESTS="<the TESTS of build/Makefile>".
        print(f"SKIP: LF_ALL_TESTS names {len(scripts)} scripts: not the whole TESTS list")
        sys.exit(77)
    absent = [t for t in scripts if not os.path.exists(os.path.join(SRCDIR, t))]
    c.check(not absent, f"every test script is in the tree ({len(scripts)} scripts)",
            " ".join(absent))
    missing = []
    seen = set()
    for t in scripts:
        path = os.path.join(SRCDIR, t)
        if t in absent:
            continue
        missing += missing_for_python(path, seen) if t.endswith(".py") else \
            missing_for_shell(path)
    c.check(not missing, "every helper a test imports or sources is in the tree",
            "; ".join(missing))
    c.finish()


if __name__ == "__main__":
    main()
