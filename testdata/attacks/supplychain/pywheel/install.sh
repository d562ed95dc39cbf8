# The project's setup step: install the vendored wheel offline, then use it.
set -e
pip3 install -q --no-index --no-deps --no-cache-dir --target vendor dist/helper-1.0-py3-none-any.whl
PYTHONPATH=vendor python3 -c 'import helper; print("helper", helper.VERSION)'
