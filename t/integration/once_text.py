#!/usr/bin/env python3
"""The file output's `format: text`: `logferry --once` over one file of awkward lines
(quotes, backslashes, tabs, UTF-8, empty lines, CR LF endings), with compression none and
zstd; the output must be exactly the input lines' bytes, each followed by '\\n'. A latin-1
input checks that the text is the decoded line, in UTF-8."""
import os
import random
import subprocess
import sys
import tempfile

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
LINES = 20000
ALPHABET = "abc xyz 0123456789 =:-_/\"\\\t{}[]'Åéü漢字€😀"


def make_lines(rng):
    lines = []
    for i in range(LINES):
        if i % 101 == 0:
            lines.append("")
            continue
        body = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 200)))
        lines.append(f"{i:06d} {body}")
    return lines


def run(root, name, src, encoding, compression):
    out = os.path.join(root, f"out-{name}-{compression}")
    conf = os.path.join(root, f"{name}-{compression}.yml")
    with open(conf, "w") as f:
        f.write(f"data_dir: {root}/data-{name}-{compression}\n"
                f"inputs:\n  - id: {name}\n    paths: [\"{src}\"]\n    encoding: {encoding}\n"
                f"outputs:\n  - name: local\n    type: file\n    path: {out}\n"
                f"    format: text\n    compression: {compression}\n    rotate_bytes: 64KiB\n")
    subprocess.run([LOGFERRY, "-c", conf, "--once"], check=True, stderr=subprocess.DEVNULL)
    files = sorted(os.listdir(out))
    ext = ".txt.zst" if compression == "zstd" else ".txt"
    if not files or not all(n.endswith(ext) for n in files):
        raise SystemExit(f"{name}/{compression}: unexpected files {files[:5]}")
    paths = [os.path.join(out, n) for n in files]
    if compression == "zstd":
        return subprocess.run(["zstd", "-dc"] + paths, capture_output=True, check=True).stdout
    return b"".join(open(p, "rb").read() for p in paths)


def main():
    rng = random.Random(11)
    lines = make_lines(rng)
    want = "".join(line + "\n" for line in lines).encode("utf-8")
    latin = [line.encode("latin-1", "replace").decode("latin-1") for line in lines]
    want_latin = "".join(line + "\n" for line in latin).encode("utf-8")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="lf-text-") as root:
        cases = [
            ("lf", "\n".join(lines).encode() + b"\n", "utf-8", want),
            ("crlf", "\r\n".join(lines).encode() + b"\r\n", "utf-8", want),
            ("latin1", "\n".join(latin).encode("latin-1") + b"\n", "latin1", want_latin),
        ]
        for name, raw, encoding, expected in cases:
            src = os.path.join(root, f"{name}.log")
            with open(src, "wb") as f:
                f.write(raw)
            for compression in ("none", "zstd"):
                got = run(root, name, src, encoding, compression)
                if got != expected:
                    failed += 1
                    n = next((i for i, (a, b) in enumerate(zip(got.split(b"\n"),
                                                                expected.split(b"\n"))) if a != b),
                             None)
                    print(f"FAIL {name}/{compression}: {len(got)} bytes, want {len(expected)}; "
                          f"first different line {n}")
                else:
                    print(f"ok {name}/{compression}: {len(lines)} lines, {len(got)} bytes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
