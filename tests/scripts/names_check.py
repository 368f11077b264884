#!/usr/bin/env python3
"""A thing that has a registry is named only by its row and the registry.

Providers, paths and links (below, a function each).

Usage: names_check.py SOURCE_ROOT

Adding a provider is one file and one registry line (docs/ARCHITECTURE.md,
"Adding a provider"); that stays true only while no other code names one.
Each kind of registered thing has a function below that returns where the
C code names one outside its row and its registry, as "file:line: ...".

Providers.  A row is providers/<name>.c defining rmq_prov_<name>, whose
.name is "<name>"; the registry is the list rmq_providers in
providers/meson.build.  The list and the row files must agree.  In the C
files of lib/, patterns/, config/, tools/, common/ and providers/, comments
left out and adjacent string literals joined, each of these is an error
outside the row of the provider named (and providers/registry.c):
  - a string literal equal to a row's name or fi_prov ("tcp",
    "tcp;ofi_rxm"), that holds its scheme ("tcp://...", " or shm://NAME")
    or that starts with its config section ("tcp.interface");
  - a string literal with three or more names in a row, separated by
    commas, bars, slashes, "or" or "and" ("shm, tcp, sockets or efa"): a
    list kept by hand;
  - the row's symbol, rmq_prov_<name>.
Case does not matter: the config reads "TCP" as tcp.  A name in prose
("the rules of verbs and efa") is left alone.

Prints one line per problem and exits 1 if there is any.  Python 3, no
modules outside the standard library.
"""

import glob
import os
import re
import sys

CODE_DIRS = ["lib", "patterns", "config", "tools", "common", "providers"]
SHOW_MAX = 60  # characters of a literal quoted in a message
IDENT = re.compile(r"[A-Za-z_]\w*")


def c_files(root, dirs):
    """The .c and .h files under dirs, relative to root, sorted."""
    found = set()
    for d in dirs:
        for ext in ("c", "h"):
            for f in glob.glob(os.path.join(root, d, "**", "*." + ext),
                               recursive=True):
                found.add(os.path.relpath(f, root))
    return sorted(found)


def c_tokens(text):
    """Yield ("str", value, line) and ("ident", name, line) of C source.

    Comments and character constants are skipped.  Adjacent string
    literals (only blanks and comments between them) come as one, with the
    line of the first.  Escapes are left as written.
    """
    i, n, line = 0, len(text), 1
    pending = None  # [value, line] of a string literal not yet yielded
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            continue
        if c in " \t\r\n\f\v":
            line += c == "\n"
            i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            body = text[i + 1:j]
            line_at = line
            line += body.count("\n")
            i = j + 1
            if c == "'":
                if pending is not None:
                    yield ("str", pending[0], pending[1])
                    pending = None
                continue
            if pending is None:
                pending = [body, line_at]
            else:
                pending[0] += body
            continue
        if pending is not None:
            yield ("str", pending[0], pending[1])
            pending = None
        m = IDENT.match(text, i)
        if m:
            yield ("ident", m.group(0), line)
            i = m.end()
        else:
            i += 1
    if pending is not None:
        yield ("str", pending[0], pending[1])


def show(literal):
    if len(literal) > SHOW_MAX:
        literal = literal[:SHOW_MAX - 3] + "..."
    return '"' + literal + '"'


def listed_run(literal, names, least=3):
    """The first run of at least `least` of names in literal, as a list
    separated by commas, bars, slashes, "or" or "and"; else None."""
    alt = "|".join(re.escape(x) for x in sorted(names, key=len, reverse=True))
    word = r"(?<![\w-])(?:%s)(?![\w-])" % alt
    sep = r"(?:\s*[,|/]\s*(?:(?:or|and)\s+)?|\s+(?:or|and)\s+)"
    m = re.search(r"%s(?:%s%s){%d,}" % (word, sep, word, least - 1),
                  literal, re.I)
    return m.group(0) if m else None


def provider_rows(root):
    """({name: (fi_prov, file)}, registry list or None, problems)."""
    rows, problems = {}, []
    for f in sorted(glob.glob(os.path.join(root, "providers", "*.c"))):
        rel = os.path.relpath(f, root)
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        m = re.search(r"\bconst\s+struct\s+rmq_prov\s+rmq_prov_(\w+)\s*=",
                      text)
        if m is None:
            continue  # the registry's own code
        stem = os.path.splitext(os.path.basename(f))[0]
        name = re.search(r'\.name\s*=\s*"([^"]*)"', text)
        fi_prov = re.search(r'\.fi_prov\s*=\s*"([^"]*)"', text)
        if m.group(1) != stem or name is None or name.group(1) != stem:
            problems.append(f"{rel}: the row must be rmq_prov_{stem} "
                            f'with .name = "{stem}"')
        rows[stem] = (fi_prov.group(1) if fi_prov else stem, rel)
    registry = None
    meson = os.path.join(root, "providers", "meson.build")
    if os.path.exists(meson):
        with open(meson, encoding="utf-8") as fh:
            m = re.search(r"^rmq_providers\s*=\s*\[([^\]]*)\]", fh.read(),
                          re.M)
        if m:
            registry = re.findall(r"'([^']+)'", m.group(1))
    if registry is None:
        problems.append("providers/meson.build: no registry (the list "
                        "rmq_providers = ['name', ...])")
    else:
        for name in registry:
            if name not in rows:
                problems.append(f"providers/meson.build: '{name}' has no "
                                f"row (providers/{name}.c)")
        for name, (_, rel) in rows.items():
            if name not in registry:
                problems.append(f"{rel}: a row not in the registry "
                                "(providers/meson.build)")
    if not rows:
        problems.append("providers/: no provider row found")
    return rows, registry, problems


def provider_names(root):
    """Providers named outside their rows and the registry."""
    rows, _, problems = provider_rows(root)
    spell = {}  # lower-case spelling -> the provider it names
    for name, (fi_prov, _) in rows.items():
        spell[name.lower()] = name
        spell[fi_prov.lower()] = name
    symbols = {"rmq_prov_" + name: name for name in rows}
    for rel in c_files(root, CODE_DIRS):
        if rel == os.path.join("providers", "registry.c"):
            continue
        stem = os.path.splitext(os.path.basename(rel))[0]
        own = stem if rows.get(stem, (None, None))[1] == rel else None
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            text = fh.read()
        for kind, tok, line in c_tokens(text):
            where = f"{rel}:{line}"
            if kind == "ident":
                if tok in symbols and symbols[tok] != own:
                    problems.append(f"{where}: {tok}: ask the registry "
                                    "(providers/prov.h)")
                continue
            low = tok.lower()
            named = spell.get(low)
            for name in rows if named is None else ():
                if re.search(r"(?<![\w-])%s://" % re.escape(name.lower()),
                             low) or low.startswith(name.lower() + "."):
                    named = name
                    break
            if named is not None and named != own:
                problems.append(f"{where}: {show(tok)} names provider "
                                f"{named}: ask the registry "
                                "(providers/prov.h) or test a row flag")
                continue
            run = listed_run(tok, rows.keys())
            if run is not None:
                problems.append(f"{where}: {show(tok)} lists providers "
                                f"({run}): use rmq_prov_names()")
    return problems


def path_rows(root):
    """([(name, kind, file)], problems): the registry, rmq_path_rows in
    lib/meson.build, checked against the rows it names."""
    problems, rows = [], []
    meson = os.path.join(root, "lib", "meson.build")
    text = ""
    if os.path.exists(meson):
        with open(meson, encoding="utf-8") as fh:
            text = fh.read()
    m = re.search(r"^rmq_path_rows\s*=\s*\[(.*?)^\]", text, re.M | re.S)
    if m is None:
        return [], ["lib/meson.build: no path registry (rmq_path_rows = "
                    "[['name', 'kind', 'file'], ...])"]
    for name, kind, f in re.findall(
            r"\[\s*'(\w+)'\s*,\s*'(\w+)'\s*,\s*'([^']+)'\s*\]",
            m.group(1)):
        rel = os.path.join("lib", f)
        rows.append((name, kind, rel))
        if kind not in ("range", "large", "link"):
            problems.append(f"lib/meson.build: {name}: no kind '{kind}'")
        if not os.path.exists(os.path.join(root, rel)):
            problems.append(f"lib/meson.build: {name}: no file {rel}")
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            if not re.search(r"\bconst\s+struct\s+rmq_path_ops\s+"
                             r"rmq_path_%s\s*=" % name, fh.read()):
                problems.append(f"{rel}: no row rmq_path_{name} (the "
                                "registry says it is here)")
    if not rows:
        problems.append("lib/meson.build: the path registry is empty")
    return rows, problems


# The library's code, where nothing but a row names a path; tools/ and
# perf/ are programs on the public API (RMQ_PATH_* is theirs to use).
PATH_DIRS = ["lib", "patterns", "config", "providers"]
PATH_REGISTRY = os.path.join("lib", "paths", "path.c")


def path_names(root):
    """Paths named outside their rows and the registry.

    A row is the file the registry names; the registry is rmq_path_rows
    in lib/meson.build, collected in lib/paths/path.c.  In the C files of
    PATH_DIRS, comments left out, each of these is an error outside the
    row of the path it names (its file, and the files beside it whose
    names start with its stem: ring.h, local_tx.c), and path.c: the public
    id RMQ_PATH_<NAME>;
    the row's symbol rmq_path_<name>; a string literal equal to its name.
    A provider row may name, as data, the rendezvous row it measured best
    (.rndv = "rndv_read"), as a YAML file would: string literals there
    are left alone (check_pathrows holds each to a LARGE row).
    """
    rows, problems = path_rows(root)
    ids = {"RMQ_PATH_" + n.upper(): n for n, _, _ in rows}
    syms = {"rmq_path_" + n: n for n, _, _ in rows}
    names = {n for n, _, _ in rows}
    def own_of(rel):
        """The paths whose row lives in rel: the row's file and those
        beside it that start with its name (ring.h, local_tx.c)."""
        d, b = os.path.split(rel)
        return {n for n, _, f in rows
                if os.path.dirname(f) == d and
                b.startswith(os.path.splitext(os.path.basename(f))[0])}

    for rel in c_files(root, PATH_DIRS):
        if rel == PATH_REGISTRY:
            continue
        own = own_of(rel)
        in_provider = rel.startswith("providers" + os.sep)
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            text = fh.read()
        for kind, tok, line in c_tokens(text):
            where = f"{rel}:{line}"
            if kind == "ident":
                n = ids.get(tok) or syms.get(tok)
                if n is not None and n not in own:
                    problems.append(f"{where}: {tok} names path {n}: "
                                    "ask its row (path_ops.h) or the table")
            elif tok in names and tok not in own and not in_provider:
                problems.append(f"{where}: {show(tok)} names a path: "
                                "rmq_path_name() or its row")
    return problems


# A link other than the endpoint's is named only in its own files
# (lib/link/<name>*): its ops table, its functions and its state.
LINK_DIRS = ["lib", "patterns", "config", "providers", "tools"]


def link_names(root):
    """A link's own names (rmq_link_<name>, rmq_<name>_*, <name>_peer)
    outside lib/link/<name>*."""
    problems = []
    links = []
    for f in sorted(glob.glob(os.path.join(root, "lib", "link", "*.c"))):
        with open(f, encoding="utf-8") as fh:
            m = re.search(r"\bconst\s+struct\s+rmq_link_ops\s+"
                          r"rmq_link_(\w+)\s*=", fh.read())
        if m and m.group(1) != "fabric":  # the endpoint's, link.h's own
            links.append(m.group(1))
    for name in links:
        own = re.compile(r"^lib/link/%s\w*\.[ch]$" % re.escape(name))
        pat = re.compile(r"^(?:rmq_link_%s|rmq_%s_\w+|%s_(?:peer|sock|of))$"
                         % ((re.escape(name),) * 3))
        for rel in c_files(root, LINK_DIRS):
            if own.match(rel.replace(os.sep, "/")):
                continue
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                text = fh.read()
            for kind, tok, line in c_tokens(text):
                if kind == "ident" and pat.match(tok):
                    problems.append(f"{rel}:{line}: {tok} belongs to the "
                                    f"{name} link (lib/link/{name}*): "
                                    "reach it through p->link")
    return problems


# One function per kind of registered thing.
KINDS = [provider_names, path_names, link_names]


def main(root):
    problems = []
    for kind in KINDS:
        problems += kind(root)
    for p in problems:
        print(p)
    print(f"names_check: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
