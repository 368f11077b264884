#!/usr/bin/env python3
"""The engine's layers (docs/ARCHITECTURE.md), checked.

Every file of lib/ and patterns/ sits in one layer below.  A file may
include headers of its own layer or lower ones, never higher: calls that go
up go through ops tables (a path's row, a pattern's ops, a reactor
callback), not includes.  No file of lib/ or patterns/ is over 900 lines.
A file in no layer is an error too: a new file must be placed.

Usage: layers.py SOURCE_ROOT
"""
import glob
import os
import re
import sys

# Lowest first.  Globs relative to the source root.
LAYERS = [
    ["lib/util.[ch]", "lib/wire.[ch]", "lib/path_ops.h", "lib/pattern_ops.h"],
    ["lib/numa.[ch]", "lib/progress.[ch]", "lib/wait.c", "lib/caps.[ch]",
     "lib/shmname.[ch]"],
    ["lib/select.[ch]", "lib/thread.[ch]"],
    ["lib/ctx.[ch]"],
    ["lib/dom.c", "lib/socket.h"],
    ["lib/ep.[ch]"],
    ["lib/rxq.[ch]", "lib/msg.[ch]"],
    ["lib/conn/*.[ch]"],
    ["lib/paths/*.[ch]"],
    ["lib/xfer.[ch]"],
    ["lib/pattern.[ch]", "lib/pattern_rma.c"],
    ["lib/sock.c", "lib/sockopt.[ch]", "lib/events.[ch]",
     "lib/backlog.[ch]"],
    ["patterns/*.[ch]"],
]
# Below every layer: the public API, the config, the provider rows, and
# what meson generates.
BELOW = ["include", "config", "providers"]
GENERATED = {"rmq_config.h", "prov_rows.h"}
MAX_LINES = 900
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root):
    layer_of = {}
    for i, globs in enumerate(LAYERS):
        for g in globs:
            for f in glob.glob(os.path.join(root, g)):
                layer_of[os.path.relpath(f, root)] = i
    errors = []
    sources = sorted(
        os.path.relpath(f, root)
        for pat in ("lib/*.[ch]", "lib/*/*.[ch]", "patterns/*.[ch]")
        for f in glob.glob(os.path.join(root, pat)))
    for f in sources:
        if f not in layer_of:
            errors.append(f"{f}: in no layer (add it to tests/layers.py "
                          "and docs/ARCHITECTURE.md)")
            continue
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            text = fh.read()
        n = text.count("\n")
        if n > MAX_LINES:
            errors.append(f"{f}: {n} lines, more than {MAX_LINES}")
        for inc in INCLUDE.findall(text):
            target = None
            for base in ("lib", "patterns", os.path.dirname(f)):
                cand = os.path.normpath(os.path.join(base, inc))
                if cand in layer_of:
                    target = cand
                    break
            if target is None:
                if inc in GENERATED or any(
                        os.path.exists(os.path.join(root, d, inc))
                        for d in BELOW):
                    continue
                errors.append(f"{f}: includes \"{inc}\", which is no "
                              "file of a layer nor below them")
                continue
            if layer_of[target] > layer_of[f]:
                errors.append(f"{f} (layer {layer_of[f]}) includes "
                              f"{target} (layer {layer_of[target]}): "
                              "upward")
    for e in errors:
        print(e)
    print(f"{len(sources)} files in {len(LAYERS)} layers: "
          f"{len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
