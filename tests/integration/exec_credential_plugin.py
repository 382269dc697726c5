"""An exec credential plugin for tests/integration/test_auth.py, run the way client-go runs one.

Prints a client.authentication.k8s.io/v1 ExecCredential holding $PLUGIN_TOKEN that expires
$PLUGIN_LIFETIME seconds from now, and appends one line per call (with KUBERNETES_EXEC_INFO) to
$PLUGIN_CALLS so the test can count calls.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta


def main() -> int:
    expires = datetime.now(UTC) + timedelta(seconds=float(os.environ.get("PLUGIN_LIFETIME", "5")))
    with open(os.environ["PLUGIN_CALLS"], "a", encoding="utf-8") as log:
        log.write(
            json.dumps({"at": datetime.now(UTC).isoformat(), "info": os.environ.get("KUBERNETES_EXEC_INFO")})
        )
        log.write("\n")
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {
            "token": os.environ["PLUGIN_TOKEN"],
            "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }
    sys.stdout.write(json.dumps(credential) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
