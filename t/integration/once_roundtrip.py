#!/usr/bin/env python3
"""Backfill round trip: generate 1,000,000 lines in several files and encodings, run
`logferry --once` into the zstd file output, decompress, and check that every line arrived
exactly once, in order per file, byte-identical after decoding, with its source offset."""
import json
import os
import random
import subprocess
import sys
import tempfile

LOGFERRY = os.environ.get("LOGFERRY", "./logferry")
TOTAL = int(os.environ.get("LF_ROUNDTRIP_LINES", "1000000"))

# (file name, encoding, line terminator, BOM, final newline, share of the lines)
FILES = [
    ("app/plain.log", "utf-8", b"\n", b"", True, 0.40),
    ("app/crlf.log", "utf-8", b"\r\n", b"", False, 0.15),
    ("app/bom.log", "utf-8", b"\n", b"\xef\xbb\xbf", True, 0.10),
    ("win/events.log", "utf-16le", "\n".encode("utf-16le"), b"", True, 0.10),
    ("win/be.log", "utf-16be", "\n".encode("utf-16be"), b"", True, 0.05),
    ("legacy/latin1.log", "latin-1", b"\n", b"", True, 0.10),
    ("legacy/sjis.log", "shift_jis", b"\n", b"", False, 0.10),
]
ICONV_NAME = {"utf-8": "utf-8", "utf-16le": "utf-16le", "utf-16be": "utf-16be",
              "latin-1": "latin1", "shift_jis": "shift_jis"}
ALPHABET = {
    "utf-8": "abcdefghijklmnopqrstuvwxyz0123456789 =:-_/\"\\\tÅéü漢字€😀",
    "utf-16le": "abcdefghijklmnopqrstuvwxyz0123456789 =:-_/\"\\Ωж漢😀",
    "utf-16be": "abcdefghijklmnopqrstuvwxyz0123456789 =:-_/Ωж漢",
    "latin-1": "abcdefghijklmnopqrstuvwxyz0123456789 =:-_/\"\\éèàüß£",
    "shift_jis": "abcdefghijklmnopqrstuvwxyz0123456789 =:-_/日本語テストかな",
}


def make_line(rng, enc, n):
    alpha = ALPHABET[enc]
    k = rng.randrange(0, 120)
    body = "".join(rng.choice(alpha) for _ in range(k % 24)) + "x" * (k // 24)
    return f"{n:07d} level=info msg={body}"


def generate(root, rng):
    expected = {}
    configs = []
    for name, enc, term, bom, final_nl, share in FILES:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        count = int(TOTAL * share)
        lines = []
        chunks = [bom]
        offset = len(bom)
        for i in range(count):
            text = make_line(rng, enc, i) if i % 97 else ""  # some empty lines
            raw = text.encode(enc)
            lines.append((offset, text))
            last = i == count - 1
            chunks.append(raw + (b"" if last and not final_nl else term))
            offset += len(raw) + (0 if last and not final_nl else len(term))
        with open(path, "wb") as f:
            f.write(b"".join(chunks))
        expected[path] = lines
        configs.append((name, ICONV_NAME[enc]))
    return expected, configs


def write_config(root, configs):
    out = os.path.join(root, "out")
    lines = [f"data_dir: {root}/data", "inputs:"]
    for i, (name, enc) in enumerate(configs):
        lines += [f"  - id: in{i}", f"    paths: [\"{root}/{name}\"]", f"    encoding: {enc}"]
    lines += ["outputs:", "  - name: local", "    type: file", f"    path: {out}",
              "    compression: zstd", "    rotate_bytes: 8MiB"]
    path = os.path.join(root, "logferry.yml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path, out


def main():
    rng = random.Random(20261130)
    with tempfile.TemporaryDirectory(prefix="lf-roundtrip-") as root:
        expected, configs = generate(root, rng)
        cfg, out = write_config(root, configs)
        run = subprocess.run([LOGFERRY, "-c", cfg, "--once"], capture_output=True)
        if run.returncode != 0:
            sys.stderr.write(run.stderr.decode(errors="replace"))
            print(f"FAIL: logferry exited {run.returncode}")
            return 1
        files = sorted(os.listdir(out))
        if not files or not all(f.startswith("logferry-") and f.endswith(".ndjson.zst") for f in files):
            print(f"FAIL: unexpected output files {files}")
            return 1
        data = subprocess.run(["zstd", "-dc"] + [os.path.join(out, f) for f in files],
                              capture_output=True, check=True).stdout
        got = {}
        for raw in data.split(b"\n")[:-1]:
            ev = json.loads(raw)
            got.setdefault(ev["log"]["file"]["path"], []).append((ev["log"]["offset"], ev["message"]))
            if "flags" in ev["log"]:
                print(f"FAIL: unexpected flags {ev['log']['flags']}")
                return 1
        failures = 0
        total = 0
        for path, lines in expected.items():
            total += len(lines)
            have = got.pop(path, [])
            if have != lines:
                failures += 1
                print(f"FAIL: {path}: expected {len(lines)} events, got {len(have)}")
                for i, (a, b) in enumerate(zip(lines, have)):
                    if a != b:
                        print(f"  first difference at event {i}: expected {a!r}, got {b!r}")
                        break
        if got:
            failures += 1
            print(f"FAIL: events from unexpected paths: {sorted(got)}")
        print(f"{total} lines in {len(expected)} files, {len(files)} output files, "
              f"{len(data)} bytes of NDJSON")
        print(f"{len(expected) - failures} passed, {failures} failed")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
