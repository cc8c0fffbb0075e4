"""Bad inputs to `cachewise plan` and `cachewise apply`, run in one Python process in the guest
(each a `cachewise.cli.main` call) so 20-odd cases cost one interpreter start. Writes
bad-inputs.json: argv, exit code and stderr of each case."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from cachewise.cli import main

out = Path(os.environ["LAB_OUT"])
cases: list[tuple[str, list[str], dict[str, str]]] = []
for line in Path(sys.argv[1]).read_text().splitlines():
    if line.strip():
        parts = line.split("\t")
        cases.append((parts[0], json.loads(parts[1]), json.loads(parts[2]) if len(parts) > 2 and parts[2] else {}))


def hide(path: str) -> str:
    """Bind-mount something empty over path (guest only): /dev/null over a program, an empty
    directory over a directory."""
    if os.path.isdir(path):
        os.makedirs("/run/lab/empty", exist_ok=True)
        subprocess.run(["mount", "--bind", "/run/lab/empty", path], check=True)
    else:
        subprocess.run(["mount", "--bind", "/dev/null", path], check=True)
    return path

results = []
for name, argv, env in cases:
    hidden = [hide(p) for p in env.pop("HIDE", "").split(":") if p]
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    err = io.StringIO()
    euid = os.geteuid()
    try:
        if env.get("AS_NOBODY"):
            os.seteuid(65534)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = main(argv)
            except SystemExit as exc:  # argparse
                rc = exc.code if isinstance(exc.code, int) else 2
    finally:
        for path in hidden:
            subprocess.run(["umount", path], check=True)
        if os.geteuid() != euid:
            os.seteuid(euid)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    results.append({"name": name, "argv": argv, "rc": rc, "stderr": err.getvalue()})
    print(f"{name}: rc {rc}: {err.getvalue().strip()[:200]}", flush=True)
(out / "bad-inputs.json").write_text(json.dumps(results, indent=1))
