# Shared by install.sh and test.sh: make .venv with a Python >= 3.11.
venv_python() {
  local py
  py=$(command -v python3 || true)
  if [ -z "$py" ] || ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "cachewise needs Python 3.11 or newer (Debian 12 has it: apt-get install python3)." >&2
    return 1
  fi
  if [ ! -x .venv/bin/python ]; then
    if ! "$py" -m venv .venv 2>/dev/null; then
      rm -rf .venv
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        "$py" -m venv .venv
      else
        echo "python3 cannot make a virtualenv; install python3-venv (sudo apt-get install python3-venv) and run again." >&2
        return 1
      fi
    fi
  fi
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
}
