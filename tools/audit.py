"""CI: `pip-audit` over constraints.txt (the versions the tests ran with). Known vulnerabilities fail the step;
only a vulnerability database that cannot be reached (no network, as on the build machine) is tolerated, and
said so (also when the index answers but has no vulnerability data: each package is "not found on PyPI"). Any
other failure of pip-audit fails the step.

constraints.txt pins every package, so pip-audit reads it as it is (`--no-deps --disable-pip`): without those it
built a virtualenv and installed the whole set (torch included) only to learn the versions it already names,
minutes of CI. A vulnerability service that stalls (one run here waited 6.5 min on a reset connection) is given
`LIMIT_S` in all, then reported as not reachable."""

from __future__ import annotations

import re
import subprocess
import sys

NETWORK = re.compile(
    r"ConnectionError|ConnectTimeout|ReadTimeout|Max retries exceeded|NameResolutionError|"
    r"Temporary failure in name resolution|Network is unreachable|Connection refused|ProxyError"
)


LIMIT_S = 300


def main() -> int:
    cmd = [sys.executable, "-m", "pip_audit", "-r", "constraints.txt", "--no-deps", "--disable-pip"]
    cmd += ["--progress-spinner", "off", "--timeout", "30"]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        print(f"audit: the vulnerability service did not answer within {LIMIT_S} s: NOT checked", file=sys.stderr)
        return 0
    output = result.stdout + result.stderr
    print(output, end="")
    skipped = len(re.findall(r"could not be audited", output))
    if result.returncode == 0 and skipped:
        # what this machine's package mirror gives: no vulnerability data for the packages it serves
        print(f"audit: {skipped} dependencies could not be audited (no vulnerability data reachable)", file=sys.stderr)
        return 0
    if result.returncode == 0:
        return 0
    if NETWORK.search(output) and not re.search(r"Found \d+ known vulnerabilit", output):
        print("audit: the vulnerability database could not be reached (network): NOT checked", file=sys.stderr)
        return 0
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
