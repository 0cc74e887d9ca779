"""deploy/: the compose file and the Kubernetes manifests parse, and agree with each other and
with `xstream secrets`: every pod and service has a certificate made for it, the Secrets the
pods mount are the ones the Job makes, etcd is https with client certificates, no node says
--insecure; and xstream-start hands a pod the secrets.

YAML is read with PyYAML, a dev requirement (requirements/dev.txt).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from xstream import kubesecrets

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "k8s"


def load(path: Path) -> list[Any]:
    with path.open() as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def k8s() -> dict[tuple[str, str], Any]:
    """Every object of the kustomization, by (kind, name)."""
    (kustomization,) = load(K8S / "kustomization.yaml")
    files = sorted(kustomization["resources"])
    assert files == sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
    return {(o["kind"], o["metadata"]["name"]): o for f in files for o in load(K8S / f)}


def flag(args: list[str], name: str) -> list[str]:
    """Every value of `--name=V` in args."""
    return [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]


def test_kubernetes_pods_have_certificates_and_the_secrets_the_job_makes() -> None:
    objs = k8s()
    job = objs[("Job", "xstream-secrets")]["spec"]["template"]["spec"]
    args = job["containers"][0]["args"]
    assert args[0] == "secrets"
    named = set(",".join(flag(args, "node")).split(","))
    (prefix,) = flag(args, "kube-secrets")
    made = {f"{prefix}-{part}" for part in kubesecrets.PARTS}
    assert {"etcd", "xstream"} <= set(flag(args, "domain"))  # the headless Services' names
    for name in ("etcd", "xstream"):
        sts = objs[("StatefulSet", name)]
        pods = {f"{name}-{i}" for i in range(sts["spec"]["replicas"])}
        assert pods <= named, f"{name}: no certificate for {pods - named}"
        mounted = {v["secret"]["secretName"] for v in sts["spec"]["template"]["spec"]["volumes"]
                   if "secret" in v}  # fmt: skip
        assert mounted and mounted <= made, (name, mounted, made)
    role = objs[("Role", "xstream-secrets")]["rules"][0]
    assert role["resources"] == ["secrets"] and set(role["verbs"]) == {"get", "create"}
    etcd = objs[("StatefulSet", "etcd")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--client-cert-auth" in etcd and "--peer-client-cert-auth" in etcd
    assert all(u.startswith("https://") for u in flag(etcd, "listen-client-urls"))
    assert flag(etcd, "trusted-ca-file") == ["/secrets/tls/nodes-ca.crt"]
    config = objs[("ConfigMap", "xstream-config")]["data"]
    assert all(u.startswith("https://") for u in config["XSTREAM_ETCD_ENDPOINTS"].split(","))
    assert config["XSTREAM_SECRETS"] and "XSTREAM_INSECURE" not in config


def test_compose_runs_every_link_with_tls_and_users() -> None:
    (compose,) = load(DEPLOY / "compose.yaml")
    services = compose["services"]
    secrets = services["secrets"]["command"]
    named = set(secrets[secrets.index("--node") + 1].split(","))
    nodes = {s: v for s, v in services.items() if v["command"][0] == "node"}
    assert len(nodes) == 3 and set(nodes) | {"etcd"} <= named
    for service, spec in nodes.items():
        cmd = spec["command"]
        assert "--insecure" not in cmd
        assert cmd[cmd.index("--name") + 1] == spec["hostname"] == service  # the healthcheck's
        assert cmd[cmd.index("--etcd") + 1].startswith("https://")
        for option in ("--tls-dir", "--aclfile", "--primary-user", "--primary-password-file"):
            assert option in cmd, (service, option)
        assert set(spec["depends_on"]) == {"secrets", "etcd"}
    etcd = services["etcd"]["command"]
    assert "--client-cert-auth" in etcd and "--trusted-ca-file=/secrets/tls/nodes-ca.crt" in etcd
    assert all(u.startswith("https://") for u in flag(etcd, "listen-client-urls"))


def _start(tmp_path: Path, **env: str) -> list[str]:
    """What xstream-start runs, with a stand-in `xstream` that prints its argv."""
    fake = tmp_path / "xstream"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    fake.chmod(0o755)
    base = {"PATH": f"{tmp_path}:/usr/bin:/bin", "HOSTNAME": "xstream-1",
            "XSTREAM_ETCD_ENDPOINTS": "https://etcd-0.etcd:2379"}  # fmt: skip
    done = subprocess.run(["sh", str(DEPLOY / "image" / "start.sh")], env={**base, **env},
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.splitlines()


def test_xstream_start_gives_the_pod_its_secrets(tmp_path: Path) -> None:
    argv = _start(tmp_path, XSTREAM_SECRETS="/secrets")
    pairs = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert argv[0] == "node" and "--insecure" not in argv
    assert pairs["--tls-dir"] == "/secrets/tls" and pairs["--name"] == "xstream-1"
    assert pairs["--aclfile"] == "/secrets/users/users.acl"
    assert pairs["--primary-password-file"] == "/secrets/users/replica.password"
    assert "--insecure" not in _start(tmp_path)  # no secrets: the node refuses 0.0.0.0
    assert "--insecure" in _start(tmp_path, XSTREAM_INSECURE="yes")
