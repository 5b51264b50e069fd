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
