"""Files the control plane authenticates with: service-account key, static token file, kubeconfigs."""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TokenUser:
    token: str
    name: str
    uid: str
    groups: tuple[str, ...] = ()


def new_token() -> str:
    return secrets.token_hex(24)


def generate_service_account_key(path: Path) -> Path:
    """An RSA private key for --service-account-key-file and --service-account-signing-key-file."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found on PATH; it is needed to create the service-account key")
    result = subprocess.run(
        [openssl, "genrsa", "-out", str(path), "2048"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"openssl genrsa failed ({result.returncode}): {result.stderr.strip()}")
    path.chmod(0o600)
    return path


def write_token_file(path: Path, users: list[TokenUser]) -> Path:
    """--token-auth-file CSV: token,user,uid,"group1,group2"."""
    lines = []
    for user in users:
        fields = [user.token, user.name, user.uid]
        if user.groups:
            fields.append('"' + ",".join(user.groups) + '"')
        lines.append(",".join(fields))
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)
    return path


def write_kubeconfig(path: Path, server: str, ca_pem: bytes, user: str, token: str) -> Path:
    cluster = "devcluster"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode("ascii"),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": f"{user}@{cluster}", "context": {"cluster": cluster, "user": user}}],
        "current-context": f"{user}@{cluster}",
    }
    # JSON is YAML: kubectl and the Python client read it as a kubeconfig.
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path
