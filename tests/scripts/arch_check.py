#!/usr/bin/env python3
"""docs/ARCHITECTURE.md against the tree.

Usage: arch_check.py SOURCE_ROOT

The page tells a newcomer where things are; it is only worth reading while
it is true.  This checks what can be checked by reading:

  (a) every file or directory the page names in backquotes (`lib/sock.c`,
      `paths/eager.c`, `lib/paths/<path>.c`: a <...> part stands for any
      name, and must match at least one) exists, from the top of the tree
      or from lib/;
  (b) the drawing of the layers (the first code block) lists files that
      exist, under the directory each section names, and every .c file of
      lib/ and patterns/ is in it;
  (c) every function or macro of ours the page names in backquotes
      (rmq_*, RMQ_*, or any name written as a call, `send_now()`) is
      defined or declared in the code, and every ops field it names of
      struct rmq_path_ops, rmq_link_ops or rmq_pattern_ops is a field.

Prints one line per problem and exits 1 if there is any.  Python 3, no
modules outside the standard library.
"""

import glob
import os
import re
import sys

PAGE = os.path.join("docs", "ARCHITECTURE.md")
CODE_DIRS = ["include", "lib", "patterns", "config", "providers", "tools",
             "common"]
FILE_LIKE = re.compile(r"^[\w./<>*-]+\.(?:c|h|py|build|in|sh|md|supp)$|"
                       r"^[\w.<>-]+(?:/[\w.<>*-]+)*/$")
DRAWN_FILE = re.compile(r"([\w-]+/)*[\w-]+\.(?:c|h|in)")
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
OPS_STRUCTS = ("rmq_path_ops", "rmq_link_ops", "rmq_pattern_ops")


def exists(root, token, built):
    """Does token name a file or directory of the tree (a <...> part is
    any name; a bare file name may be anywhere; a generated header is one
    a meson.build makes)?"""
    pat = re.sub(r"<[^>]*>", "*", token.rstrip("/"))
    for base in ("", "lib"):
        if glob.glob(os.path.join(root, base, pat)):
            return True
    if "/" not in pat:
        if glob.glob(os.path.join(root, "**", pat), recursive=True):
            return True
        return pat in built
    return False


def meson_text(root):
    """Every meson.build of the tree: their variables, tests and the files
    they generate."""
    out = []
    for f in glob.glob(os.path.join(root, "**", "meson.build"),
                       recursive=True):
        if os.sep + "build" in os.path.relpath(f, root) or \
                os.path.relpath(f, root).startswith("build"):
            continue
        with open(f, encoding="utf-8") as fh:
            out.append(fh.read())
    return "\n".join(out)


def code_text(root):
    """All C of the tree, comments left in (a declaration is enough)."""
    out = []
    for d in CODE_DIRS:
        for f in glob.glob(os.path.join(root, d, "**", "*.[ch]"),
                           recursive=True):
            with open(f, encoding="utf-8") as fh:
                out.append(fh.read())
    for f in glob.glob(os.path.join(root, "lib", "*.in")):
        with open(f, encoding="utf-8") as fh:
            out.append(fh.read())
    return "\n".join(out)


def ops_fields(text):
    """The field names of the ops structs."""
    fields = set()
    for name in OPS_STRUCTS:
        m = re.search(r"struct\s+%s\s*\{(.*?)\n\};" % name, text, re.S)
        if m is None:
            continue
        body = re.sub(r"/\*.*?\*/", " ", m.group(1), flags=re.S)
        fields |= set(re.findall(r"\(\s*\*\s*(\w+)\s*\)", body))
        fields |= set(re.findall(r"(\w+)\s*(?:\[[^\]]*\])?\s*;", body))
    return fields


def check_drawing(root, page, problems):
    m = re.search(r"^```\n(.*?)^```", page, re.M | re.S)
    if m is None:
        problems.append(f"{PAGE}: no drawing of the layers (a code block)")
        return
    drawn, cur = set(), None
    for line in m.group(1).splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("─"):
            cur = None if not line.startswith("   ") else cur
            continue
        first = stripped.split()[0]
        if not line.startswith("   "):
            # a top-level entry: "lib/paths/", "lib/sock.c", "patterns/"
            if first.endswith("/"):
                cur = first.rstrip("/")
                if not os.path.isdir(os.path.join(root, cur)):
                    problems.append(f"{PAGE}: the drawing's {first} is no "
                                    "directory")
                continue
            cur = None
            names = []
            for w in stripped.split():
                if not DRAWN_FILE.fullmatch(w):
                    break
                names.append(w)
            for w in names:
                if not os.path.exists(os.path.join(root, w)):
                    problems.append(f"{PAGE}: the drawing's {w} does not "
                                    "exist")
                drawn.add(os.path.normpath(w))
            continue
        if cur is None or line[3] == " ":
            continue  # no directory, or the text of an entry, wrapped
        # an entry under a directory: "   path.c eager.c   what they do"
        for w in stripped.split():
            if not DRAWN_FILE.fullmatch(w):
                break
            rel = os.path.normpath(os.path.join(cur, w))
            if not os.path.exists(os.path.join(root, rel)):
                problems.append(f"{PAGE}: the drawing's {rel} does not "
                                "exist")
            drawn.add(rel)
    for d in ("lib", "patterns"):
        for f in sorted(glob.glob(os.path.join(root, d, "**", "*.c"),
                                  recursive=True)):
            rel = os.path.relpath(f, root)
            if rel not in drawn:
                problems.append(f"{PAGE}: {rel} is not in the drawing of "
                                "the layers")


def main(root):
    problems = []
    with open(os.path.join(root, PAGE), encoding="utf-8") as fh:
        page = fh.read()
    text = code_text(root)
    meson = meson_text(root)
    built = set(re.findall(r"output:\s*'([^']+)'", meson))
    idents = set(IDENT.findall(text)) | set(IDENT.findall(meson))
    fields = ops_fields(text)
    for tok in sorted(set(re.findall(r"`([^`\n]+)`", page))):
        tok = tok.strip()
        if FILE_LIKE.match(tok):
            if not exists(root, tok, built):
                problems.append(f"{PAGE}: `{tok}` names no file of the tree")
            continue
        call = re.fullmatch(r"([A-Za-z_]\w*)\(\)", tok)
        name = call.group(1) if call else tok
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            continue
        if call or name.startswith(("rmq_", "RMQ_")):
            if name not in idents:
                problems.append(f"{PAGE}: `{tok}` is defined nowhere in "
                                "the code")
        elif "_" in name and name.islower() and name not in idents and \
                name not in fields:
            # snake_case words the page quotes: fields, keys, functions
            problems.append(f"{PAGE}: `{tok}` is no name of the code")
    check_drawing(root, page, problems)
    for p in problems:
        print(p)
    print(f"arch_check: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
