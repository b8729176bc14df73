"""Without the [speech] extra the package still imports, and a function that needs it says how to get it."""

import subprocess
import sys

SCRIPT = """
import sys
for name in ("librosa", "soxr"):
    sys.modules[name] = None  # as if not installed
import numpy as np
import cvbayes, cvbayes.cli, cvbayes.speech
from cvbayes.speech import mfcc
try:
    mfcc(np.ones(1000))
except ImportError as error:
    print(error)
"""


def test_the_core_imports_without_the_speech_extra_and_names_the_install_command():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    assert 'install the speech extra: pip install "cvbayes[speech]"' in result.stdout
