"""Store `xstream secrets`' tree as Kubernetes Secrets, from inside a pod (deploy/k8s's Job):
DIR/tls, DIR/users, DIR/client and DIR/ca become the Secrets PREFIX-tls, PREFIX-users,
PREFIX-client and PREFIX-ca of the pod's namespace, one key per file, so a Secret mounted as
a volume is that folder again (a node's --tls-dir, --aclfile, ...).

All or nothing, once: when every Secret exists they are kept (a Job run again changes no
password); when only some do, it refuses (their material would not match) and says which to
delete. Talks to the API server as the pod's service account (its token, its CA, the
KUBERNETES_SERVICE_HOST/PORT every pod has) with the standard library only; needs `get` and
`create` on secrets (deploy/k8s/secrets-job.yaml's Role).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
from pathlib import Path
from typing import Any

from xstream.engine.errors import CoreError

ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")  # token, ca.crt, namespace
PARTS = ("tls", "users", "client", "ca")  # DIR's folders, in the order they are created
TIMEOUT = 10.0  # seconds per API call


class KubeError(CoreError):
    """The API server refused or could not be reached (the message says which call)."""


class _Api:
    def __init__(self, account: Path) -> None:
        try:
            host = os.environ["KUBERNETES_SERVICE_HOST"]
            self.token = (account / "token").read_text().strip()
            self.namespace = (account / "namespace").read_text().strip()
            self.context = ssl.create_default_context(cafile=account / "ca.crt")
        except (KeyError, OSError, ssl.SSLError) as e:
            raise KubeError(f"not in a Kubernetes pod with a service account ({e!r})") from None
        self.host = host
        self.port = int(os.environ.get("KUBERNETES_SERVICE_PORT", "443"))

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPSConnection(
            self.host, self.port, timeout=TIMEOUT, context=self.context
        )
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, data, headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise KubeError(f"{method} {path}: {e!r}") from None
        finally:
            conn.close()
        try:
            reply = json.loads(raw) if raw else {}
        except ValueError:
            reply = {"message": raw[:200].decode("utf-8", "replace")}
        return resp.status, reply

    def secrets(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/secrets"


def manifest(name: str, folder: Path) -> dict[str, Any]:
    """A Secret holding every file of `folder` under its file name (a file in a subfolder as
    SUB-NAME: DIR/ca/clients/ca.key is clients-ca.key)."""
    data = {
        "-".join(f.relative_to(folder).parts): base64.b64encode(f.read_bytes()).decode()
        for f in sorted(folder.rglob("*"))
        if f.is_file() and not f.name.startswith(".")
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "xstream"}},
        "type": "Opaque",
        "data": data,
    }


def publish(out: Path, prefix: str, account: Path = ACCOUNT) -> list[str]:
    """Create the Secrets from `out` (or keep them all); a line per Secret saying which."""
    api = _Api(account)
    names = {part: f"{prefix}-{part}" for part in PARTS}
    found = []
    for name in names.values():
        status, reply = api.call("GET", f"{api.secrets()}/{name}")
        if status == 200:
            found.append(name)
        elif status != 404:
            raise KubeError(f"GET secret {name}: HTTP {status}: {reply.get('message', '')}")
    if len(found) == len(names):
        return [f"kept secret/{n}" for n in names.values()]
    if found:
        raise KubeError(
            f"only some of the Secrets exist ({', '.join(found)}): delete them to make all "
            "anew (new certificates and passwords), or create the missing ones by hand"
        )
    lines = []
    for part, name in names.items():
        status, reply = api.call("POST", api.secrets(), manifest(name, out / part))
        if status not in (200, 201):
            raise KubeError(f"POST secret {name}: HTTP {status}: {reply.get('message', '')}")
        lines.append(f"created secret/{name}")
    return lines
