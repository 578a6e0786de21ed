#!/usr/bin/env bash
# Installs Autobahn|Testsuite's `wstest`, WebSocket's conformance judge (`framebench check
# --conformance --protocol ws`), into a virtual environment of its own at
# target/autobahn/venv, and prints the line that points framebench at it. Autobahn|Testsuite
# 25.10.1 is Python 2.7 only: its code does not parse under Python 3, and its PyPI sdist lacks
# the requirements file, so a Python 3 install "succeeds" with no dependencies and `wstest`
# dies at import. The interpreter is $PYTHON2, else `python2.7` on PATH, else pyenv's 2.7.18.
# The pins are the upstream Dockerfile's (crossbario/autobahn-testsuite); wsaccel, its optional
# C accelerator, is left out when it does not build (the pure-Python fallback only slows the
# 16 MiB cases of 9.*).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${CARGO_TARGET_DIR:-target}/autobahn/venv
wstest=$venv/bin/wstest
if [ -x "$wstest" ] && "$wstest" --autobahnversion >/dev/null 2>&1; then
  echo "export FRAMEBENCH_WSTEST=$(realpath "$wstest")"
  exit 0
fi
py2=${PYTHON2:-}
for candidate in "$py2" "$(command -v python2.7 || true)" "${PYENV_ROOT:-$HOME/.pyenv}/versions/2.7.18/bin/python2.7"; do
  # Run, not only found: pyenv's shim for python2.7 is on PATH and fails unless 2.7 is selected.
  if [ -n "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (2, 7)' 2>/dev/null; then
    py2=$candidate
    break
  fi
  py2=
done
if [ -z "$py2" ]; then
  echo "autobahn.sh: no Python 2.7 here (set PYTHON2, or install one: pyenv install 2.7.18);" \
    "Autobahn|Testsuite runs on nothing newer" >&2
  exit 1
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
# The interpreter's own pip may predate --no-python-version-warning (pyenv's 2.7.18 brings pip
# 19.2.3, which refuses it): only the venv's pip, 20.3.4, is given that flag.
"$py2" -m pip install --quiet --disable-pip-version-check 'virtualenv==20.15.1'
"$py2" -m virtualenv --quiet "$venv"
pip=("$venv/bin/pip" --quiet --disable-pip-version-check --no-python-version-warning)
"${pip[@]}" install 'pip==20.3.4' 'setuptools==44.0.0' 'wheel==0.36.2'
"${pip[@]}" install 'incremental==16.10.1'
if ! "${pip[@]}" install --no-build-isolation 'autobahntestsuite==25.10.1'; then
  echo "autobahn.sh: wsaccel did not build; installing without it" >&2
  "${pip[@]}" install 'setuptools==44.0.0' 'txaio==2.1.0' 'incremental==16.10.1' \
    'pyOpenSSL==19.1.0' 'cryptography==3.3.2' 'Twisted==19.10.0' 'zope.interface==4.6.0' \
    'jinja2==2.11.3' 'markupsafe==1.1.1' 'Werkzeug==1.0.1' 'klein==17.10.0' \
    'service_identity==18.1.0' 'unittest2==1.1.0' 'six==1.16.0' 'autobahn[twisted]==0.10.9'
  "${pip[@]}" install --no-deps 'autobahntestsuite==25.10.1'
fi
"$wstest" --autobahnversion >&2
echo "export FRAMEBENCH_WSTEST=$(realpath "$wstest")"
