#!/usr/bin/env python3
"""Every FI_E* code that the installed fi_errno.h defines, as an X-macro list.

Usage: fi_errnos.py FI_ERRNO_H OUTPUT_H

Lines commented out in the header (libfabric keeps some errno names there
for reference) are not codes and are left out; FI_ERRNO_OFFSET and
FI_ERRNO_MAX are bounds, not codes.
"""
import re
import sys


def main(src, dst):
    text = open(src, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = "\n".join(l for l in text.splitlines()
                     if not l.lstrip().startswith("//"))
    names = []
    for m in re.finditer(r"\b(FI_E[A-Z0-9_]+)\b\s*(=|[A-Z0-9_]+\s*$)", text,
                         re.M):
        n = m.group(1)
        if n in ("FI_ERRNO_OFFSET", "FI_ERRNO_MAX", "FI_ERRNO_H") or n in names:
            continue
        names.append(n)
    for m in re.finditer(r"^\s*#\s*define\s+(FI_E[A-Z0-9_]+)\s+\S", text,
                         re.M):
        n = m.group(1)
        if n not in ("FI_ERRNO_OFFSET", "FI_ERRNO_MAX", "FI_ERRNO_H") and n not in names:
            names.append(n)
    if len(names) < 20:
        sys.exit(f"{src}: only {len(names)} FI_E* codes found")
    with open(dst, "w", encoding="utf-8") as out:
        out.write("/* Generated from %s by fi_errnos.py */\n" % src)
        out.write("#define FI_ERRNOS(X) \\\n")
        out.write(" \\\n".join(f"\tX({n})" for n in names))
        out.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
