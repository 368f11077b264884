#!/usr/bin/env python3
"""The engine's layers (docs/ARCHITECTURE.md), checked.

Every file of lib/ and patterns/ sits in one layer below.  A file may
include headers of its own layer or lower ones, and call functions defined
there, never higher: calls that go up go through ops tables (a path's row,
a pattern's ops, a reactor callback), which are no direct calls.  No files
call each other in a circle, whatever their layers (Tarjan's strongly
connected components; a source and its header of the same name are one
file here, and a circle inside one file is fine).  config/, providers/
and common/fi_api.h sit below every layer: they call nothing above them
either.  No file of
lib/ or patterns/ is over 900 lines.  A file in no layer is an error too:
a new file must be placed.

The calls are read from the text as the style guide writes it: a function
is defined where its name is followed by its parameters and a body at file
scope; a call is `name(` inside a body (or inside a function-like macro of
the file), resolved to the calling file first when it defines the name
(static or not), else to the one file that defines it non-static, or to a
header that defines it static inline.  `p->fn(` and `ops.fn(` are calls
through a table and not counted; a macro named like a call is no call, but
what its body calls is the defining file's call, and an object-like macro
that names a function (`#define api_lock rmq_sock_lock`) calls it.

Usage: layers.py SOURCE_ROOT
"""
import fnmatch
import glob
import os
import re
import sys

# Lowest first.  Globs relative to the source root.
LAYERS = [
    ["lib/util.[ch]", "lib/wire.[ch]", "lib/path_ops.h", "lib/link_ops.h",
     "lib/pattern_ops.h"],
    ["lib/numa.[ch]", "lib/progress.[ch]", "lib/wait.c", "lib/caps.[ch]",
     "lib/shmname.[ch]"],
    ["lib/select.[ch]", "lib/thread.[ch]"],
    ["lib/ctx.[ch]"],
    ["lib/dom.c", "lib/socket.h"],
    ["lib/ep.[ch]"],
    ["lib/rxq.[ch]", "lib/msg.[ch]"],
    ["lib/conn/*.[ch]"],
    ["lib/paths/*.[ch]", "lib/link/*.[ch]"],
    ["lib/xfer.[ch]"],
    ["lib/pattern.[ch]", "lib/pattern_rma.c"],
    ["lib/frames.[ch]"],
    ["lib/sock.c", "lib/sockopt.[ch]", "lib/events.[ch]",
     "lib/backlog.[ch]"],
    # PUB/SUB's frames and prefix sets, then its log, under the patterns;
    # the registry opens sockets and contexts on top of them all.
    ["patterns/topics.[ch]"],
    ["patterns/fanout.[ch]", "patterns/fanout_read.c"],
    ["patterns/pair.c", "patterns/reqrep.c", "patterns/pipeline.c",
     "patterns/pubsub.c", "patterns/rpc.c"],
    ["patterns/registry.c"],
]
# Below every layer: the public API, the config, the provider rows, and
# what meson generates.
BELOW = ["include", "config", "providers", "common"]
BELOW_SOURCES = ("config/*.[ch]", "providers/*.[ch]", "common/fi_api.h")
GENERATED = {"rmq_config.h", "rmq_path_rows.h", "prov_rows.h"}
MAX_LINES = 900
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# What looks like a call and is not one.
NOT_CALLS = {"if", "for", "while", "switch", "return", "sizeof", "do",
             "_Alignof", "alignof", "_Static_assert", "static_assert",
             "_Generic", "__attribute__", "__typeof__", "typeof",
             "defined", "case", "else"}
# Comments, string and character literals: blanked, newlines kept.
BLANK = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"'
                   r"|'(?:\\.|[^'\\\n])*'", re.S)
DIRECTIVE = re.compile(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', re.M)
DEFINE = re.compile(r'#\s*define\s+(\w+)(\()?(.*)', re.S)
CALL = re.compile(r'(?<![\w.])(?<!->)([A-Za-z_]\w*)\s*\(')
IDENT_BEFORE = re.compile(r'([A-Za-z_]\w*)\s*$')


def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


def matching_open(code, close):
    """The index of the '(' that the ')' at close closes, or -1."""
    depth = 0
    for i in range(close, -1, -1):
        if code[i] == ')':
            depth += 1
        elif code[i] == '(':
            depth -= 1
            if depth == 0:
                return i
    return -1


class Source:
    """One file's code: its functions, the calls in them, its macros."""

    def __init__(self, text):
        self.defs = {}     # name -> static?
        self.calls = []    # (line, caller, callee name)
        self.aliases = {}  # object-like macro -> the name it stands for
        code = BLANK.sub(blank, text)
        macros = []
        for m in DIRECTIVE.finditer(code):
            d = DEFINE.match(m.group(0).strip())
            if d is None:
                continue
            body = d.group(3).replace('\\\n', ' ')
            if d.group(2):
                macros.append((d.group(1), m.start(),
                               body.split(')', 1)[-1]))
            elif re.fullmatch(r'\s*[A-Za-z_]\w*\s*', body):
                self.aliases[d.group(1)] = body.strip()
        self.code = DIRECTIVE.sub(blank, code)
        for name, at, body in macros:
            for c in CALL.finditer(body):
                self.calls.append((self.line(at), name + "() (a macro)",
                                   c.group(1)))
        self._functions()

    def line(self, at):
        return self.code.count('\n', 0, at) + 1

    def _functions(self):
        """Each body at file scope that follows a name and its
        parameters: a function, and the calls in it."""
        code, depth, start, body = self.code, 0, 0, None
        for m in re.finditer(r'[{};]', code):
            ch, at = m.group(0), m.start()
            if ch == '{':
                if depth == 0:
                    body = self._defined(code[start:at])
                    if body is not None:
                        body = (body, at)
                depth += 1
            elif ch == '}':
                depth -= 1
                if depth == 0:
                    start = at + 1
                    if body is not None:
                        self._calls(body[0], body[1], at)
                    body = None
            elif depth == 0:
                start = at + 1

    def _defined(self, head):
        """The name a body after this head defines, or None."""
        head = head.rstrip()
        while head.endswith(')'):
            op = matching_open(head, len(head) - 1)
            m = IDENT_BEFORE.search(head[:max(op, 0)])
            if op < 0 or m is None:
                return None
            if m.group(1) != "__attribute__":
                static = re.search(r'\bstatic\b', head[:m.start()])
                self.defs.setdefault(m.group(1), static is not None)
                return m.group(1)
            head = head[:m.start()].rstrip()
        return None

    def _calls(self, name, start, end):
        for c in CALL.finditer(self.code, start, end):
            self.calls.append((self.line(c.start()), name + "()",
                               c.group(1)))


def resolve_include(inc, f, known):
    for base in ("lib", "patterns", os.path.dirname(f)):
        cand = os.path.normpath(os.path.join(base, inc))
        if cand in known:
            return cand
    return None


def unit_of(f):
    """A source and its header of the same name are one unit."""
    return os.path.splitext(f)[0]


def circles(edges):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    nodes = sorted(set(edges) | {b for a in edges for b in edges[a]})

    def visit(v):
        # Iterative, so a long chain of files needs no deep recursion.
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(out)


def check(root):
    """Every problem of the tree at root, and a line that sums it up."""
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
    below = sorted(os.path.relpath(f, root) for pat in BELOW_SOURCES
                   for f in glob.glob(os.path.join(root, pat)))
    known = set(sources) | set(below)
    parsed, includes = {}, {}
    for f in sources + below:
        with open(os.path.join(root, f), encoding="utf-8") as fh:
            text = fh.read()
        parsed[f] = Source(text)
        includes[f] = [t for t in (resolve_include(inc, f, known)
                                   for inc in INCLUDE.findall(text))
                       if t is not None]
        if f in below:
            continue
        if f not in layer_of:
            errors.append(f"{f}: in no layer (add it to "
                          "tests/scripts/layers.py and docs/ARCHITECTURE.md)")
            continue
        n = text.count("\n")
        if n > MAX_LINES:
            errors.append(f"{f}: {n} lines, more than {MAX_LINES}")
        for inc in INCLUDE.findall(text):
            target = resolve_include(inc, f, layer_of)
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
    for f in below:
        layer_of[f] = -1

    # Where each name is defined: non-static anywhere; static inline in
    # a header (seen by whoever includes it).
    public, inline, aliases = {}, {}, {}
    for f, src in parsed.items():
        for name, static in src.defs.items():
            if not static:
                public.setdefault(name, []).append(f)
            elif f.endswith(".h"):
                inline.setdefault(name, []).append(f)
        aliases.update(src.aliases)

    def seen(f):
        """Every file f includes, directly or not."""
        out, todo = set(), [f]
        while todo:
            for g in includes.get(todo.pop(), ()):
                if g not in out:
                    out.add(g)
                    todo.append(g)
        return out

    def defined(name, src):
        return name in src.defs or name in public or name in inline

    graph, ties, ncalls = {}, {}, 0
    for f, src in sorted(parsed.items()):
        vis = seen(f)
        for line, caller, name in src.calls:
            for _ in range(8):  # an alias of an alias ...
                if defined(name, src):
                    break
                name = src.aliases.get(name, aliases.get(name, name))
            if name in NOT_CALLS or name in src.defs:
                continue
            targets = [g for g in public.get(name, ()) if g != f]
            targets += [g for g in inline.get(name, ()) if g in vis]
            ncalls += len(targets) > 0
            for g in targets:
                a, b = unit_of(f), unit_of(g)
                if a != b:
                    graph.setdefault(a, set()).add(b)
                    ties.setdefault((a, b), set()).add(name + "()")
                if layer_of.get(g, -1) > layer_of.get(f, len(LAYERS)):
                    errors.append(f"{f}:{line}: {caller} -> {name}() "
                                  f"(defined in {g}, layer {layer_of[g]}; "
                                  f"{f} is in layer {layer_of[f]})")
    names = {}
    for f in parsed:
        names.setdefault(unit_of(f), []).append(f)
    for u, fs in names.items():
        names[u] = fs[0] if len(fs) == 1 else u + ".[ch]"
    for comp in circles(graph):
        errors.append(f"a circle of calls between {len(comp)} files: "
                      + ", ".join(names[u] for u in comp))
        for a in comp:
            for b in comp:
                if b in graph.get(a, ()):
                    called = sorted(ties[(a, b)])
                    more = (f", and {len(called) - 6} more"
                            if len(called) > 6 else "")
                    errors.append(f"  {names[a]} -> {names[b]}: "
                                  f"{', '.join(called[:6])}{more}")
    problems = sum(1 for e in errors if not e.startswith("  "))
    return errors, (f"{len(sources)} files in {len(LAYERS)} layers "
                    f"({len(below)} below them), {ncalls} calls between "
                    f"files: {problems} problem(s)")


# The checker's own test, on a tree of two files made to fail: a call
# through an alias from lib/util.c up into lib/sock.c, a circle between
# the two, and what is no call upward (a table's fn, a function-like
# macro, a static of its own that the other file defines too).
SELF_TEST = {
    "lib/util.c": """
#define twice(x) ((x) + (x))
#define api_up rmq_up

static int
helper(void)
{
	return twice(1);
}

int
rmq_down(struct rmq_socket *s)
{
	s->ops->rmq_up(s);
	s->ops.rmq_up(s);
	return api_up(s) + helper();
}
""",
    "lib/sock.c": """
int
helper(void)
{
	return 0;
}

int
rmq_up(struct rmq_socket *s)
{
	return rmq_down(s);
}
""",
}


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        for f, text in SELF_TEST.items():
            os.makedirs(os.path.join(root, os.path.dirname(f)),
                        exist_ok=True)
            with open(os.path.join(root, f), "w", encoding="utf-8") as fh:
                fh.write(text)
        errors, _ = check(root)
    up, down = (next(i for i, globs in enumerate(LAYERS)
                     if any(fnmatch.fnmatch(f, g) for g in globs))
                for f in ("lib/sock.c", "lib/util.c"))
    want = [f"lib/util.c:16: rmq_down() -> rmq_up() (defined in lib/sock.c, "
            f"layer {up}; lib/util.c is in layer {down})",
            "a circle of calls between 2 files: lib/sock.c, lib/util.c",
            "  lib/sock.c -> lib/util.c: rmq_down()",
            "  lib/util.c -> lib/sock.c: rmq_up()"]
    return errors == want, errors


def main(root):
    ok, got = self_test()
    if not ok:
        print("layers.py: its own test found, instead of one upward call "
              "and one circle:")
        for e in got:
            print(e)
        return 1
    errors, summary = check(root)
    for e in errors:
        print(e)
    print(summary)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
