# ocibuild's PEP 517 frontend for `[python] project`: the project's directory (read-only in the
# step) copied to the fixed path pep517.py unpacks an sdist to, then built as pep517.py builds
# an unpacked sdist (what follows this head is pep517.py's from `top = os.listdir(work)`).
# argv: PROJECT_DIR OUTDIR; PROJECT_DIR's last component is the project's name, which the
# messages say.
import importlib
import importlib.metadata
import os
import re
import shutil
import sys

sdist, out = sys.argv[1], sys.argv[2]
work = "/tmp/ocibuild-sdist"
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
try:
    shutil.copytree(sdist, os.path.join(work, os.path.basename(sdist)), symlinks=True)
except OSError as e:
    sys.exit("ocibuild: the project %s cannot be copied to build it: %s" % (os.path.basename(sdist), e))
# A zip (the wheel) has no time before 1980: an epoch before it (ocibuild's default is 0),
# which backends such as hatchling write as the files' times and fail on, is given to the
# backend as 1980-01-01 00:00:00 UTC, as the wheel package's bdist_wheel clamps it.
try:
    if int(os.environ.get("SOURCE_DATE_EPOCH", "0")) < 315532800:
        os.environ["SOURCE_DATE_EPOCH"] = "315532800"
except ValueError:
    os.environ["SOURCE_DATE_EPOCH"] = "315532800"
