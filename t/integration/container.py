#!/usr/bin/env python3
"""The container image recipe and the Kubernetes manifests, checked without a Docker engine
or a cluster (neither exists here):

- packaging/docker/Dockerfile: two debian:12-slim stages; every file it COPYs exists in the
  source tree (or, from the build stage, in the build); the build stage installs the
  packages configure needs; the runtime stage installs the Debian packages that provide
  every library `ldd logferry` lists, and those it loads on demand (`logferry --version`)
  with what they link (found with dpkg -S); it runs as a non-root user on
  conf/kubernetes.yml.
- packaging/kubernetes/*.yaml and base/*.yaml: every document parses (python3-yaml) and has apiVersion,
  kind and a name; each ConfigMap's logferry.yml passes `logferry --test-config` with the
  container's environment (the DaemonSet's is conf/kubernetes.yml verbatim); the probes,
  the container port, the scrape annotations and the Service use metrics.listen's port; the
  config's globs, data_dir and output directory lie in the container's mounts (writable
  where the agent writes, read-only where it reads); the DaemonSet's journald inputs read
  the node's /var/log/journal, and /run/log/journal only where the former does not exist,
  each mounted read-only from the node's same path; the securityContext is as
  docs/operating.md describes.
- conf/kubernetes.yml, previewed on a CRI file under .../var/log/containers/, gives a
  joined Java stack trace with the Kubernetes names."""
import glob
import json
import os
import re
import shlex
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
LOGFERRY = tt.LOGFERRY
c = tt.Checks()
tmp = tempfile.mkdtemp(prefix="lf-container-")


# ---- Dockerfile ----

def dockerfile_instructions(path):
    """(instruction, arguments) pairs, continuation lines joined, comments dropped."""
    out, cur = [], ""
    for line in open(path):
        s = line.rstrip("\n")
        if not cur and (not s.strip() or s.lstrip().startswith("#")):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        word, _, rest = cur.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        cur = ""
    return out


def apt_packages(run_args):
    pkgs = []
    for cmd in run_args.split("&&"):
        words = cmd.split()
        if "apt-get" in words and "install" in words:
            pkgs += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return pkgs


ins = dockerfile_instructions(os.path.join(SRC, "packaging/docker/Dockerfile"))
stages = []  # each: {"from":..., "as":..., "ins": [...]}
for word, args in ins:
    if word == "FROM":
        parts = args.split()
        stages.append({"from": parts[0], "as": parts[2] if len(parts) > 2 else None, "ins": []})
    elif stages:
        stages[-1]["ins"].append((word, args))
c.check(len(stages) == 2 and all(s["from"] == "debian:12-slim" for s in stages),
        "the Dockerfile has two stages, both FROM debian:12-slim",
        str([s["from"] for s in stages]))
build_stage, run_stage = stages[0], stages[-1]

# Where the build stage puts the source tree: WORKDIR then `COPY . .`.
workdir = next((a for w, a in build_stage["ins"] if w == "WORKDIR"), "/")
copies_ok, copied = True, []
for stage in stages:
    for word, args in stage["ins"]:
        if word not in ("COPY", "ADD"):
            continue
        words = [w for w in shlex.split(args) if not w.startswith("--chown") and not w.startswith("--chmod")]
        frm = next((w.split("=", 1)[1] for w in words if w.startswith("--from=")), None)
        words = [w for w in words if not w.startswith("--")]
        for srcpath in words[:-1]:
            if frm is None:
                where = os.path.join(SRC, srcpath)
            else:
                # A file of the build stage: the source tree at WORKDIR, built in ./build.
                rel = os.path.relpath(srcpath, workdir)
                where = os.path.join(BUILD, rel[len("build/"):]) if rel.startswith("build/") \
                    else os.path.join(SRC, rel)
            copied.append((srcpath, words[-1]))
            if not os.path.exists(where):
                copies_ok = False
                c.check(False, f"COPY source {srcpath} exists", f"no {where}")
c.check(copies_ok and len(copied) >= 3, "every file the Dockerfile copies exists in the tree or the build",
        ", ".join(s for s, _ in copied))

build_pkgs = [p for w, a in build_stage["ins"] if w == "RUN" for p in apt_packages(a)]
boot = open(os.path.join(SRC, "bootstrap.sh")).read()
boot_pkgs = re.search(r"build_packages=\((.*?)\)", boot, re.S).group(1).split()
needed = [p for p in boot_pkgs if p.endswith("-dev") or p in
          ("build-essential", "autoconf", "automake", "pkg-config", "check")]
c.check(set(needed) <= set(build_pkgs), "the build stage installs what configure needs",
        f"missing: {sorted(set(needed) - set(build_pkgs))}")

run_pkgs = [p for w, a in run_stage["ins"] if w == "RUN" for p in apt_packages(a)]
c.check(not any(p.endswith("-dev") for p in run_pkgs), "the runtime stage installs no -dev package",
        str(run_pkgs))

# The runtime libraries: ldd's paths -> dpkg -S -> packages. A sanitizer build links
# gcc's sanitizer runtimes, which the image's plain build does not.
SANITIZER_PKGS = {"libasan8", "libubsan1", "libstdc++6", "libgcc-s1", "liblsan0", "libtsan2"}
ALWAYS_THERE = {"libc6"}  # essential in every Debian image
ldd = subprocess.run(["ldd", LOGFERRY], capture_output=True, text=True).stdout
libs = re.findall(r"=> (/\S+)", ldd)
version = subprocess.run([LOGFERRY, "--version"], capture_output=True, text=True).stdout
on_demand = re.findall(r"(lib\S+\.so\.\S+) \(", version)
ld_cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
found = {}
for name in on_demand:
    m = re.search(r"^\s*%s \(.*\) => (\S+)$" % re.escape(name), ld_cache, re.M)
    if m:
        found[name] = m.group(1)
        libs.append(m.group(1))
        libs += re.findall(r"=> (/\S+)", subprocess.run(["ldd", m.group(1)], capture_output=True,
                                                        text=True).stdout)
c.check(len(on_demand) == 3 and len(found) == 3,
        "ldconfig finds the three libraries loaded on demand", f"{on_demand}: {found}")
libs = list(dict.fromkeys(libs))
lib_pkgs = {}
for lib in libs:
    real = os.path.realpath(lib)
    owner = None
    for cand in dict.fromkeys([lib, real, re.sub(r"^/usr", "", lib), re.sub(r"^/usr", "", real),
                               "/usr" + lib, "/usr" + real]):
        r = subprocess.run(["dpkg", "-S", cand], capture_output=True, text=True)
        if r.returncode == 0:
            owner = r.stdout.split(":")[0]
            break
    lib_pkgs[os.path.basename(lib)] = owner
unowned = [lib for lib, p in lib_pkgs.items() if p is None]
needed_run = {p for p in lib_pkgs.values() if p} - ALWAYS_THERE - SANITIZER_PKGS
c.check(not unowned and len(lib_pkgs) >= 5, "dpkg -S names the package of every library ldd lists",
        json.dumps(lib_pkgs))
c.check(needed_run <= set(run_pkgs), "the runtime stage installs every library package the binary needs",
        f"needed {sorted(needed_run)}, installed {sorted(run_pkgs)}, missing {sorted(needed_run - set(run_pkgs))}")

user = [a for w, a in run_stage["ins"] if w == "USER"]
c.check(bool(user) and user[-1].split(":")[0] not in ("0", "root"), "the image runs as a non-root user",
        str(user))
conf_copy = [d for s, d in copied if s == "conf/kubernetes.yml"]
cmd = " ".join(a for w, a in run_stage["ins"] if w in ("ENTRYPOINT", "CMD"))
c.check(conf_copy == ["/etc/logferry/logferry.yml"] and "/etc/logferry/logferry.yml" in cmd,
        "the image runs on conf/kubernetes.yml as /etc/logferry/logferry.yml", f"{conf_copy}, {cmd}")
dockerignore = open(os.path.join(SRC, "packaging/docker/Dockerfile.dockerignore")).read().split()
c.check("build" in dockerignore, "the build context leaves a local build/ out")

# ---- Kubernetes manifests ----

docs = []
manifests = glob.glob(os.path.join(SRC, "packaging/kubernetes/*.yaml")) + \
    [p for p in glob.glob(os.path.join(SRC, "packaging/kubernetes/base/*.yaml"))
     if os.path.basename(p) != "kustomization.yaml"]   # t/integration/kustomize.py: the rest
for path in sorted(manifests):
    try:
        loaded = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    except yaml.YAMLError as e:
        c.check(False, f"{os.path.basename(path)} parses", str(e))
        continue
    ok = all(isinstance(d, dict) and d.get("apiVersion") and d.get("kind") and
             d.get("metadata", {}).get("name") for d in loaded)
    c.check(ok and loaded, f"{os.path.basename(path)} parses: " +
            ", ".join(f"{d.get('kind')}/{d.get('metadata', {}).get('name')}" for d in loaded))
    docs += [(os.path.basename(path), d) for d in loaded]

configmaps = {(d["metadata"].get("namespace"), d["metadata"]["name"]): d
              for _, d in docs if d["kind"] == "ConfigMap"}
workloads = [(f, d) for f, d in docs if d["kind"] in ("DaemonSet", "Deployment")]
c.check({d["kind"] for _, d in workloads} == {"DaemonSet", "Deployment"},
        "there is a DaemonSet and a sidecar Deployment")
ds_cm = [d for _, d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "logferry-config"]
c.check(len(ds_cm) == 1 and ds_cm[0]["data"]["logferry.yml"] ==
        open(os.path.join(SRC, "conf/kubernetes.yml")).read(),
        "the DaemonSet's ConfigMap holds conf/kubernetes.yml verbatim")


def under(path, mounts):
    """The mount whose mountPath contains path, the longest one."""
    best = None
    for m in mounts:
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"].rstrip("/")):
                best = m
    return best


def fixed_dir(glob_path):
    parts = []
    for seg in glob_path.split("/"):
        if any(ch in seg for ch in "*?["):
            break
        parts.append(seg)
    return "/".join(parts) or "/"


service_ports = [p for _, d in docs if d["kind"] == "Service" for p in d["spec"]["ports"]]
monitors = [d for _, d in docs if d["kind"] == "ServiceMonitor"]

for fname, wl in workloads:
    kind = wl["kind"]
    pod = wl["spec"]["template"]
    spec = pod["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    agent = next(x for x in spec["containers"] if x["image"].startswith("logferry"))
    mounts = agent.get("volumeMounts", [])
    args = agent.get("args", []) + agent.get("command", [])
    conf_path = args[args.index("-c") + 1] if "-c" in args else "/etc/logferry/logferry.yml"
    cm_mount = under(conf_path, mounts)
    cm = None
    if cm_mount and "configMap" in volumes.get(cm_mount["name"], {}):
        cm_name = volumes[cm_mount["name"]]["configMap"]["name"]
        cm = configmaps.get((wl["metadata"].get("namespace"), cm_name))
    key = os.path.relpath(conf_path, cm_mount["mountPath"]) if cm_mount else None
    c.check(cm is not None and key in cm.get("data", {}),
            f"{kind}: -c {conf_path} is a key of a ConfigMap mounted there")
    if cm is None or key not in cm.get("data", {}):
        continue
    text = cm["data"][key]

    # The container's environment, with made-up values for what the API server fills in.
    env = dict(os.environ)
    for e in agent.get("env", []):
        env[e["name"]] = e.get("value", f"from-{e['name'].lower()}")
    cfile = os.path.join(tmp, f"{kind}.yml")
    with open(cfile, "w") as f:
        f.write(text)
    r = subprocess.run([LOGFERRY, "-c", cfile, "--test-config"], capture_output=True, text=True, env=env)
    c.check(r.returncode == 0 and r.stdout.strip() == "config OK",
            f"{kind}: its config passes logferry --test-config", (r.stdout + r.stderr).strip())

    # What the agent will use, with ${VAR} and ${VAR:-default} expanded from that env.
    def expand(v):
        return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}",
                      lambda m: env.get(m.group(1)) or (m.group(2) or ""), v) if isinstance(v, str) else v
    conf = yaml.safe_load(text)
    listen = expand(conf.get("metrics", {}).get("listen", "127.0.0.1:5066"))
    port = int(listen.rsplit(":", 1)[1])
    host = listen.rsplit(":", 1)[0]
    c.check(host not in ("127.0.0.1", "[::1]", "localhost"),
            f"{kind}: metrics.listen ({listen}) is reachable from the kubelet and Prometheus")
    named = {p["name"]: p["containerPort"] for p in agent.get("ports", []) if "name" in p}
    c.check(port in [p["containerPort"] for p in agent.get("ports", [])],
            f"{kind}: the container declares port {port}", str(agent.get("ports")))
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        hg = agent.get(probe, {}).get("httpGet", {})
        pport = named.get(hg.get("port"), hg.get("port"))
        c.check(hg.get("path") == path and pport == port,
                f"{kind}: {probe} asks {path} on metrics.listen's port {port}", str(hg))
    ann = pod["metadata"].get("annotations", {})
    c.check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(port)
            and ann.get("prometheus.io/path") == "/metrics",
            f"{kind}: the prometheus.io annotations scrape port {port} at /metrics", str(ann))
    res = agent.get("resources", {})
    c.check(all(res.get(k, {}).get(r) for k in ("requests", "limits") for r in ("cpu", "memory")),
            f"{kind}: cpu and memory requests and limits are set", str(res))

    # Paths: what it reads lies in a mount, what it writes in a writable one.
    data_dir = expand(conf.get("data_dir", "/var/lib/logferry"))
    m = under(data_dir, mounts)
    c.check(m is not None and not m.get("readOnly"), f"{kind}: data_dir {data_dir} is a writable mount",
            str(m))
    if kind == "DaemonSet":
        v = volumes.get(m["name"], {}) if m else {}
        c.check(v.get("hostPath", {}).get("path") == data_dir == m["mountPath"],
                f"{kind}: data_dir is the node's {data_dir} (the registry outlives the pod)", str(v))
    for out in conf["outputs"]:
        if out["type"] == "file":
            p = expand(out["path"])
            m = under(p, mounts)
            c.check(m is not None and not m.get("readOnly"), f"{kind}: output {out['name']}'s {p} is writable",
                    str(m))
    for inp in conf["inputs"]:
        for g in inp.get("paths", []):
            d = fixed_dir(expand(g))
            m = under(d, mounts)
            c.check(m is not None and m.get("readOnly") is True,
                    f"{kind}: input {inp['id']}'s {g} lies in a read-only mount", str(m))
            if m and kind == "DaemonSet":
                v = volumes.get(m["name"], {})
                c.check(v.get("hostPath", {}).get("path") == m["mountPath"] == "/var/log",
                        f"{kind}: it is the node's /var/log, at the same path (the links resolve)", str(v))

    # The node's journal: journald inputs read a directory (a pod's own local journal is
    # the image's, not the node's) mounted read-only from the node's same path.
    journals = {}
    for inp in conf["inputs"]:
        if inp.get("type") != "journald":
            continue
        d = expand(inp.get("directory", ""))
        m = under(d, mounts) if d else None
        host = volumes.get(m["name"], {}).get("hostPath", {}).get("path") if m else None
        node_path = host.rstrip("/") + d[len(m["mountPath"].rstrip("/")):] if host else None
        c.check(m is not None and m.get("readOnly") is True and node_path == d,
                f"{kind}: journald input {inp['id']} reads {d or 'no directory'}, "
                "the node's same directory mounted read-only", str(m))
        journals[d] = inp
    if kind == "DaemonSet":
        persistent = journals.get("/var/log/journal")
        runtime = journals.get("/run/log/journal")
        c.check(persistent is not None and "skip_if_exists" not in persistent,
                f"{kind}: it reads the node's /var/log/journal", str(sorted(journals)))
        c.check(runtime is not None and runtime.get("skip_if_exists") == ["/var/log/journal"],
                f"{kind}: and /run/log/journal only where /var/log/journal does not exist "
                "(no entry read twice)", json.dumps(runtime))

    # securityContext (container's over pod's).
    sc = dict(spec.get("securityContext", {}))
    sc.update(agent.get("securityContext", {}))
    caps = sc.get("capabilities", {})
    c.check(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
            and caps.get("drop") == ["ALL"] and set(caps.get("add", [])) <= {"DAC_READ_SEARCH"}
            and sc.get("seccompProfile", {}).get("type") == "RuntimeDefault"
            and not sc.get("privileged"),
            f"{kind}: read-only root, no privilege escalation, drop ALL (+DAC_READ_SEARCH at most), "
            "RuntimeDefault seccomp", json.dumps(sc))
    if kind == "Deployment":
        c.check(sc.get("runAsNonRoot") is True and not caps.get("add"),
                f"{kind}: the sidecar runs as non-root with no capability", json.dumps(sc))
        shared = [mm["name"] for mm in mounts if "emptyDir" in volumes.get(mm["name"], {})
                  and any(mm["name"] == am["name"] for x in spec["containers"] if x is not agent
                          for am in x.get("volumeMounts", []))]
        c.check(bool(shared), f"{kind}: the app and logferry share an emptyDir", str(shared))
    else:
        for fn, svc_port in [(f, p) for f, d in docs if d["kind"] == "Service" for p in d["spec"]["ports"]]:
            tp = named.get(svc_port.get("targetPort"), svc_port.get("targetPort"))
            c.check(tp == port, f"the Service's port {svc_port['name']} targets {port}", str(svc_port))
        c.check(bool(monitors) and all(e["port"] in [p["name"] for p in service_ports]
                                       for mon in monitors for e in mon["spec"]["endpoints"]),
                "the ServiceMonitor scrapes the Service's named port")

# ---- conf/kubernetes.yml on a CRI file ----
root = os.path.join(tmp, "node", "var", "log", "containers")
os.makedirs(root)
cid = "4f2a9c0d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c"
logf = os.path.join(root, f"web-7d9f_shop_app-{cid}.log")
with open(logf, "w") as f:
    f.write("2026-11-30T01:02:03.000000001Z stdout F Exception in thread \"main\" java.lang.IllegalStateException: boom\n"
            "2026-11-30T01:02:03.000000002Z stdout F \tat com.example.Web.handle(Web.java:42)\n"
            "2026-11-30T01:02:04.000000003Z stderr F GC pause 12ms\n")
env = dict(os.environ, LOGFERRY_DATA=os.path.join(tmp, "data"), NODE_NAME="node-1")
r = subprocess.run([LOGFERRY, "-c", os.path.join(SRC, "conf/kubernetes.yml"), "--preview", "containers", logf],
                   capture_output=True, text=True, env=env)
events = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
ok = r.returncode == 0 and len(events) == 2
c.check(ok, "conf/kubernetes.yml previews a CRI file into 2 events", "" if ok else r.stdout + r.stderr)
if len(events) == 2:
    e = events[0]
    c.check(e["message"] == "Exception in thread \"main\" java.lang.IllegalStateException: boom\n"
            "\tat com.example.Web.handle(Web.java:42)" and "multiline" in e["log"].get("flags", []),
            "the Java stack trace is one event", repr(e["message"]))
    ok = (e.get("kubernetes") == {"pod": {"name": "web-7d9f"}, "namespace": "shop",
                                  "container": {"name": "app"}} and e["container"]["id"] == cid
          and e["fields"] == {"node": "node-1"} and e["@timestamp"] == "2026-11-30T01:02:03.000Z")
    c.check(ok, "with the Kubernetes names, the container id, the node and the runtime's time",
            "" if ok else json.dumps(e))
    c.check(events[1]["stream"] == "stderr" and events[1]["message"] == "GC pause 12ms",
            "and stderr kept apart", events[1]["message"])

subprocess.run(["rm", "-rf", tmp])
c.finish()
