#!/usr/bin/env python3
"""The kustomize base and overlays in packaging/kubernetes, rendered by the real
`kubectl kustomize` (Debian's kubernetes-client) and checked as a cluster would read them:

- base: the Namespace, ServiceAccount, ClusterRole (get/list/watch on pods and namespaces)
  and its binding to the DaemonSet's account, the PriorityClass the DaemonSet names, the
  ConfigMap (conf/kubernetes.yml verbatim) and the DaemonSet; it tolerates every taint of
  every effect that keeps or evicts pods; its terminationGracePeriodSeconds exceeds the
  config's shutdown_timeout by at least 10 s; every journald input's directory is the
  node's same directory, mounted read-only; its image is the one `make docker-image`
  builds (as is the sidecar's and the one the Dockerfile's comment names).
- each overlay (elasticsearch, loki, kafka): the same objects, the ConfigMap's logferry.yml
  the base's but for its outputs, one output of the overlay's type whose address is an
  environment variable the overlay sets in the DaemonSet; the config passes
  `logferry --test-config` with the container's environment and fails without that
  variable, naming it.
Every rendered ConfigMap's logferry.yml passes `logferry --test-config`."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tailtest as tt  # noqa: E402

try:
    import yaml
except ImportError:
    print("python3-yaml is missing: ./bootstrap.sh deps --all installs it")
    sys.exit(1)

SRC = os.environ.get("LF_SRCDIR", ".")
BUILD = os.environ.get("LF_BUILDDIR", ".")
K8S = os.path.join(SRC, "packaging", "kubernetes")
OVERLAYS = {"elasticsearch": "elasticsearch", "loki": "loki", "kafka": "kafka"}
BASE_KINDS = ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "Namespace",
              "PriorityClass", "ServiceAccount"]
c = tt.Checks()
tmp = tempfile.mkdtemp(prefix="lf-kustomize-")


def render(d):
    """The objects `kubectl kustomize d` writes, by (kind, name)."""
    r = subprocess.run(["kubectl", "kustomize", d], capture_output=True, text=True, timeout=60)
    c.check(r.returncode == 0, f"kubectl kustomize {os.path.relpath(d, K8S)} renders",
            r.stderr.strip()[-400:])
    objs = [o for o in yaml.safe_load_all(r.stdout) if o] if r.returncode == 0 else []
    return {(o["kind"], o["metadata"]["name"]): o for o in objs}


def agent_env(ds):
    """The agent container's environment; values the API server fills in are made up."""
    env = dict(os.environ)
    for e in ds["spec"]["template"]["spec"]["containers"][0].get("env", []):
        env[e["name"]] = e.get("value", f"from-{e['name'].lower()}")
    env["LOGFERRY_DATA"] = os.path.join(tmp, "data")   # the node's hostPath, here
    return env


def test_config(text, env, tag):
    cfile = os.path.join(tmp, f"{tag}.yml")
    with open(cfile, "w") as f:
        f.write(text)
    return subprocess.run([tt.LOGFERRY, "-c", cfile, "--test-config"], capture_output=True,
                          text=True, env=env)


def seconds(v):
    m = re.fullmatch(r"(\d+)(ms|s|m|h)", str(v))
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def built_image():
    """The tag `make docker-image` gives, read from make's dry run in the build tree."""
    r = subprocess.run(["make", "-s", "-n", "-C", BUILD, "docker-image"], capture_output=True,
                       text=True)
    m = re.search(r"docker build .* -t (\S+)", r.stdout)
    return m.group(1) if m else None


def check_base(objs):
    c.check(sorted(k for k, _ in objs) == BASE_KINDS, "base: the objects are " +
            ", ".join(f"{k}/{n}" for k, n in sorted(objs)))
    ds = objs.get(("DaemonSet", "logferry"))
    if ds is None:
        return
    spec = ds["spec"]["template"]["spec"]
    sa = spec.get("serviceAccountName")
    role = objs.get(("ClusterRole", "logferry"), {})
    rules = {(res, verb) for r in role.get("rules", []) if r.get("apiGroups") == [""]
             for res in r["resources"] for verb in r["verbs"]}
    want = {(res, v) for res in ("pods", "namespaces") for v in ("get", "list", "watch")}
    c.check(rules == want, "base: the ClusterRole reads pods and namespaces, nothing more",
            repr(sorted(rules)))
    binding = objs.get(("ClusterRoleBinding", "logferry"), {})
    c.check(binding.get("roleRef", {}).get("name") == "logferry" and
            binding.get("subjects") == [{"kind": "ServiceAccount", "name": sa,
                                         "namespace": ds["metadata"]["namespace"]}] and
            ("ServiceAccount", sa) in objs,
            f"base: the binding gives the role to the DaemonSet's account {sa}", repr(binding))
    pc = objs.get(("PriorityClass", spec.get("priorityClassName")), {})
    c.check(0 < pc.get("value", 0) <= 1000000000 and pc.get("globalDefault") is False,
            f"base: the DaemonSet's PriorityClass {spec.get('priorityClassName')} ranks above "
            "workloads, in the user range", repr(pc.get("value")))
    tol = spec.get("tolerations", [])
    for effect in ("NoSchedule", "NoExecute", "PreferNoSchedule"):
        c.check(any(t.get("operator") == "Exists" and "key" not in t and
                    t.get("effect") in (None, effect) for t in tol),
                f"base: every {effect} taint is tolerated", repr(tol))
    c.check(not any("tolerationSeconds" in t for t in tol), "base: no NoExecute taint evicts "
            "the agent after a delay")

    cm = objs.get(("ConfigMap", "logferry-config"), {})
    text = cm.get("data", {}).get("logferry.yml", "")
    with open(os.path.join(SRC, "conf", "kubernetes.yml")) as f:
        c.check(text == f.read(), "base: the ConfigMap holds conf/kubernetes.yml verbatim")
    conf = yaml.safe_load(text) or {}
    c.check(conf.get("config_watch") is True, "base: the config follows its ConfigMap "
            "(config_watch: true)")
    shutdown = seconds(conf.get("shutdown_timeout", "10s"))
    grace = spec.get("terminationGracePeriodSeconds", 30)
    c.check(grace >= shutdown + 10, f"base: terminationGracePeriodSeconds {grace} leaves 10 s "
            f"or more past shutdown_timeout ({shutdown:g} s)")

    agent = spec["containers"][0]
    kube = conf.get("kubernetes") or {}
    node_env = [e for e in agent.get("env", []) if e.get("name") == "NODE_NAME"]
    c.check(kube.get("enabled") is True and spec.get("automountServiceAccountToken") is True and
            node_env and node_env[0].get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            == "spec.nodeName",
            "base: pod metadata is on, with the account's token mounted and NODE_NAME from "
            "spec.nodeName", repr((kube, spec.get("automountServiceAccountToken"), node_env)))
    mounts = agent.get("volumeMounts", [])
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    journals = [i["directory"] for i in conf.get("inputs", []) if i.get("type") == "journald"]
    for d in journals:
        m = max((m for m in mounts if d == m["mountPath"] or d.startswith(m["mountPath"] + "/")),
                key=lambda m: len(m["mountPath"]), default=None)
        host = volumes.get(m["name"], {}).get("hostPath", {}).get("path") if m else None
        c.check(m is not None and m.get("readOnly") is True and host == m["mountPath"],
                f"base: the journal {d} is the node's, mounted read-only at its own path",
                repr(m))
    c.check(len(journals) == 2, "base: both of the node's journal directories are read",
            repr(journals))

    image = built_image()
    with open(os.path.join(SRC, "packaging", "kubernetes", "sidecar.yaml")) as f:
        side = [x for d in yaml.safe_load_all(f) if d and d["kind"] == "Deployment"
                for x in d["spec"]["template"]["spec"]["containers"] if x["name"] == "logferry"]
    with open(os.path.join(SRC, "packaging", "docker", "Dockerfile")) as f:
        named = re.findall(r"docker build .* -t (\S+) \.", f.read())
    c.check(image is not None and image.startswith("logferry:") and
            agent["image"] == image and [x["image"] for x in side] == [image] and
            named == [image],
            f"the DaemonSet, the sidecar and the Dockerfile name the image `make docker-image` "
            f"builds ({image})",
            f"DaemonSet {agent['image']}, sidecar {[x['image'] for x in side]}, Dockerfile "
            f"{named}")

    r = test_config(text, agent_env(ds), "base")
    c.check(r.returncode == 0 and r.stdout.strip() == "config OK",
            "base: its logferry.yml passes logferry --test-config", (r.stdout + r.stderr).strip())


def without(objs, kind, name, drop):
    o = objs.get((kind, name))
    if o is None:
        return None
    o = yaml.safe_load(yaml.safe_dump(o))
    drop(o)
    return o


def check_overlay(name, typ, base, objs):
    c.check(sorted(objs) == sorted(base), f"{name}: the base's objects",
            repr(sorted(objs)))
    ds = objs.get(("DaemonSet", "logferry"))
    cm = objs.get(("ConfigMap", "logferry-config"))
    if ds is None or cm is None:
        return
    patched = (("DaemonSet", "logferry"), ("ConfigMap", "logferry-config"))
    same = all(objs[k] == base[k] for k in base if k in objs and k not in patched)
    base_env = {e["name"] for e in base[("DaemonSet", "logferry")]["spec"]["template"]["spec"]
                ["containers"][0].get("env", [])}
    added = [e for e in ds["spec"]["template"]["spec"]["containers"][0].get("env", [])
             if e["name"] not in base_env]

    def no_env(o):
        for x in o["spec"]["template"]["spec"]["containers"]:
            x["env"] = [e for e in x.get("env", []) if e["name"] in base_env]
    c.check(same and without(objs, "DaemonSet", "logferry", no_env) ==
            without(base, "DaemonSet", "logferry", no_env) and len(added) == 1 and
            added[0].get("value"),
            f"{name}: only the ConfigMap and one variable of the agent's environment differ",
            repr(added))
    var = added[0]["name"] if added else None

    text = cm["data"]["logferry.yml"]
    conf = yaml.safe_load(text)
    base_conf = yaml.safe_load(base[("ConfigMap", "logferry-config")]["data"]["logferry.yml"])
    outs = conf.pop("outputs", [])
    base_conf.pop("outputs", None)
    c.check(conf == base_conf, f"{name}: logferry.yml is the base's but for its outputs")
    addr = outs[0].get("url", outs[0].get("brokers")) if len(outs) == 1 else None
    c.check(len(outs) == 1 and outs[0]["type"] == typ and var and
            "${%s}" % var in str(addr),
            f"{name}: one {typ} output, its address from ${{{var}}}", repr(outs))

    env = agent_env(ds)
    r = test_config(text, env, name)
    c.check(r.returncode == 0 and r.stdout.strip() == "config OK",
            f"{name}: its logferry.yml passes logferry --test-config",
            (r.stdout + r.stderr).strip())
    env.pop(var, None)
    r = test_config(text, env, name + "-noenv")
    c.check(r.returncode != 0 and f"environment variable {var} is not set" in r.stderr,
            f"{name}: without {var} the config is refused, naming it", r.stderr.strip())


def main():
    if shutil.which("kubectl") is None:
        sys.exit("FAIL: kubectl is missing (Debian package kubernetes-client: "
                 "./bootstrap.sh deps --all)")
    base = render(os.path.join(K8S, "base"))
    check_base(base)
    for name, typ in OVERLAYS.items():
        check_overlay(name, typ, base, render(os.path.join(K8S, "overlays", name)))
    shutil.rmtree(tmp)
    return c.finish()


if __name__ == "__main__":
    main()
