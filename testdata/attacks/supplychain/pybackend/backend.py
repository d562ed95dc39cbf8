# An in-tree PEP 517 build backend: pip imports it and calls its hooks at install.
import base64
import hashlib
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME, VERSION = "helper", "1.0.0"
DIST = "%s-%s.dist-info" % (NAME, VERSION)


def _payload():
    subprocess.run([sys.executable, os.path.join(HERE, "tools", "payload.py")], check=True)


def get_requires_for_build_wheel(config_settings=None):
    return []


def _files():
    return {
        NAME + ".py": b"VALUE = 1\n",
        DIST + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (NAME, VERSION)).encode(),
        DIST + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    os.makedirs(os.path.join(metadata_directory, DIST), exist_ok=True)
    for name, data in _files().items():
        if name.startswith(DIST):
            with open(os.path.join(metadata_directory, name), "wb") as f:
                f.write(data)
    return DIST


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _payload()
    wheel = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    files = _files()
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
        record.append(DIST + "/RECORD,,")
        z.writestr(DIST + "/RECORD", "\n".join(record) + "\n")
    return wheel
