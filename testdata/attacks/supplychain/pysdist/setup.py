# An sdist's setup.py: it runs at install, before anything is installed.
import os
import subprocess
import sys

from setuptools import setup

subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools", "payload.py")], check=True)
setup(name="helper", version="1.0.0", py_modules=["helper"])
