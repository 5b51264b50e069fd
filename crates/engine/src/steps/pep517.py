# ocibuild's PEP 517 frontend: one sdist into one wheel, in the builder `[python] sdist-builder`
# names, with what the builder has (no network, no build isolation: the backend and the build
# requirements are the builder's, pinned by its own lock).
# argv: SDIST OUTDIR. The source is unpacked at a fixed path so that what compilers record of
# it is the same on every build; SOURCE_DATE_EPOCH is set by ocibuild (the backends' wheel
# writers take the zip times from it).
import importlib
import importlib.metadata
import os
import re
import shutil
import sys
import tarfile
import zipfile

sdist, out = sys.argv[1], sys.argv[2]
work = "/tmp/ocibuild-sdist"
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
# A zip (the wheel) has no time before 1980: an epoch before it (ocibuild's default is 0),
# which backends such as hatchling write as the files' times and fail on, is given to the
# backend as 1980-01-01 00:00:00 UTC, as the wheel package's bdist_wheel clamps it.
try:
    if int(os.environ.get("SOURCE_DATE_EPOCH", "0")) < 315532800:
        os.environ["SOURCE_DATE_EPOCH"] = "315532800"
except ValueError:
    os.environ["SOURCE_DATE_EPOCH"] = "315532800"


def unpack():
    if sdist.endswith(".zip"):
        with zipfile.ZipFile(sdist) as z:
            for n in z.namelist():
                p = os.path.normpath(n)
                if p.startswith("..") or os.path.isabs(p):
                    raise ValueError("member %r is outside the archive" % n)
            z.extractall(work)
        return
    with tarfile.open(sdist) as t:
        if hasattr(tarfile, "data_filter"):
            t.extractall(work, filter="data")
            return
        for m in t.getmembers():
            p = os.path.normpath(m.name)
            if p.startswith("..") or os.path.isabs(p) or not (m.isfile() or m.isdir()):
                raise ValueError("member %r is not a plain file inside the archive" % m.name)
        t.extractall(work)


try:
    unpack()
except (ValueError, tarfile.TarError, zipfile.BadZipFile, OSError) as e:
    sys.exit("ocibuild: the sdist %s is refused: %s" % (os.path.basename(sdist), e))
top = os.listdir(work)
src = os.path.join(work, top[0]) if len(top) == 1 and os.path.isdir(os.path.join(work, top[0])) else work

build_system = {}
pyproject = os.path.join(src, "pyproject.toml")
if os.path.exists(pyproject):
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            sys.exit("ocibuild: the builder's Python has no tomllib (3.11+) nor tomli to read pyproject.toml")
    with open(pyproject, "rb") as f:
        build_system = tomllib.load(f).get("build-system", {})
# PEP 517's fallback when pyproject.toml names no backend.
backend = build_system.get("build-backend", "setuptools.build_meta:__legacy__")
requires = build_system.get("requires", ["setuptools>=40.8.0"])

try:
    from packaging.markers import Marker
    from packaging.requirements import Requirement
except ImportError:
    Requirement = None


def missing(reqs):
    """The requirements the builder does not have installed (by name and, with packaging,
    by version and marker)."""
    out = []
    for r in reqs:
        if Requirement is not None:
            req = Requirement(r)
            if req.marker is not None and not req.marker.evaluate():
                continue
            try:
                have = importlib.metadata.version(req.name)
            except importlib.metadata.PackageNotFoundError:
                out.append("%s (not installed)" % r)
                continue
            if req.specifier and not req.specifier.contains(have, prereleases=True):
                out.append("%s (the builder has %s)" % (r, have))
        else:
            name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r)
            try:
                importlib.metadata.version(name.group(1) if name else r)
            except importlib.metadata.PackageNotFoundError:
                out.append("%s (not installed)" % r)
    return out


def fail_missing(what, reqs):
    sys.exit(
        "ocibuild: the builder lacks %s of %s: %s\n"
        "  (add them to the builder recipe: its [apt] packages, or wheels in its [python] lock)"
        % (what, os.path.basename(sdist), "; ".join(reqs))
    )


lacking = missing(requires)
if lacking:
    fail_missing("build requirements", lacking)
os.chdir(src)
sys.path[:0] = [os.path.join(src, p) for p in build_system.get("backend-path", [])]
module, _, obj = backend.partition(":")
try:
    hooks = importlib.import_module(module)
except ImportError as e:
    sys.exit("ocibuild: the build backend %s of %s cannot be imported: %s" % (backend, os.path.basename(sdist), e))
for attr in filter(None, obj.split(".")):
    hooks = getattr(hooks, attr)
if hasattr(hooks, "get_requires_for_build_wheel"):
    lacking = missing(hooks.get_requires_for_build_wheel({}))
    if lacking:
        fail_missing("what its backend asks for", lacking)
os.makedirs(out, exist_ok=True)
name = hooks.build_wheel(out)
print("ocibuild: built", name, "with", backend)
