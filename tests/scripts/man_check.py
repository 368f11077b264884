#!/usr/bin/env python3
"""Check the man pages against the public header and the build.

Usage: man_check.py SOURCE_ROOT

  (a) every function declared RMQ_API in include/rmq.h has a page
      man/NAME.3.in (a full page or a one-line ".so" alias), and the page
      it resolves to shows its prototype in its SYNOPSIS;
  (b) every prototype in a page's SYNOPSIS (the .B/.BI/... lines, the roff
      pieces joined into C text) matches the declaration in rmq.h: same
      return type, name and parameter types (parameter names may differ);
      a function-pointer typedef shown there matches the header's too;
  (c) every ".so" target exists;
  (d) every page listed in man/meson.build exists, and every man/*.in is
      listed there;
  (e) every full page's .TH line carries @DATE@ and @VERSION@;
  (f) every socket option of enum rmq_opt has its entry in
      rmq_socket.3 (a .TP line, then ".B NAME" or ".BR NAME ..."), every
      socket type of enum rmq_type is named in its rmq_socket_open
      section, and every send/recv flag (RMQ_DONTWAIT, RMQ_SNDMORE) is
      named in rmq_send.3.

Prints one line per problem and exits 1 if there is any.  Python 3, no
modules outside the standard library.
"""

import os
import re
import sys

# Words that end a type rather than name a parameter ("unsigned int").
TYPE_WORDS = {
    'void', 'char', 'short', 'int', 'long', 'float', 'double', 'signed',
    'unsigned', 'size_t', 'ssize_t', 'int64_t', 'uint64_t', 'int32_t',
    'uint32_t', 'const', 'struct', 'enum',
}


def strip_c_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def norm_space(s):
    s = re.sub(r'\s+', ' ', s).strip()
    s = re.sub(r'\s*\*\s*', ' * ', s)        # "char *p" == "char* p"
    s = re.sub(r'\s*([(),;\[\]])\s*', r'\1', s)
    return re.sub(r'\s+', ' ', s).strip()


def param_type(param, typedefs):
    """The type of one parameter, without its name, normalised."""
    param = norm_space(param)
    toks = re.findall(r'[A-Za-z_]\w*|\*|\[\]|\[\d*\]', param)
    idents = [t for t in toks if re.match(r'[A-Za-z_]', t)]
    if (len(idents) >= 2 and toks and toks[-1] == idents[-1]
            and idents[-1] not in TYPE_WORDS and idents[-1] not in typedefs):
        toks = toks[:-1]
    return ' '.join(toks)


def split_params(params):
    params = params.strip()
    if params == '':
        return []
    return [p for p in (x.strip() for x in params.split(','))]


def signature(ret, name, params, typedefs):
    types = [param_type(p, typedefs) for p in split_params(params)]
    if types == ['void']:
        types = []
    return (param_type(ret, typedefs) if ret.strip() else '', name,
            tuple(types))


def show(sig):
    ret, name, types = sig
    return '%s %s(%s)' % (ret, name, ', '.join(types) or 'void')


def read_header(path):
    """{name: signature} of the RMQ_API functions, and the typedefs."""
    text = strip_c_comments(open(path, encoding='utf-8').read())
    typedefs = set(re.findall(r'\btypedef\b[^;]*?\b(\w+)\s*;', text))
    fnptrs = {}
    for m in re.finditer(r'\btypedef\s+([^;()]*?)\(\s*\*\s*(\w+)\s*\)'
                         r'\s*\(([^;]*?)\)\s*;', text):
        typedefs.add(m.group(2))
        fnptrs[m.group(2)] = (m.group(1), m.group(3))
    funcs = {}
    for m in re.finditer(r'\bRMQ_API\b([^;{]*?)\b(rmq_\w+)\s*\(([^;]*?)\)'
                         r'\s*;', text, flags=re.S):
        funcs[m.group(2)] = (m.group(1), m.group(3))
    sigs = {n: signature(r, n, p, typedefs) for n, (r, p) in funcs.items()}
    fsigs = {n: signature(r, n, p, typedefs) for n, (r, p) in fnptrs.items()}
    return sigs, fsigs, typedefs


ROFF_ESCAPES = [
    ('\\-', '-'), ('\\(dq', '"'), ('\\(aq', "'"), ('\\~', ' '),
    ('\\ ', ' '), ('\\&', ''), ('\\e', '\\'), ('\\%', ''),
]


def roff_text(s):
    s = re.sub(r'\\f[BIRP]|\\f\(..|\\f\[[^]]*\]', '', s)
    for a, b in ROFF_ESCAPES:
        s = s.replace(a, b)
    return s


def roff_args(rest):
    """The arguments of a font macro: words, or quoted strings."""
    args, cur, quoted, had = [], '', False, False
    i = 0
    while i < len(rest):
        c = rest[i]
        if c == '"':
            if quoted and i + 1 < len(rest) and rest[i + 1] == '"':
                cur += '"'
                i += 1
            else:
                quoted = not quoted
                had = True
        elif c in ' \t' and not quoted:
            if cur or had:
                args.append(cur)
            cur, had = '', False
        else:
            cur += c
        i += 1
    if cur or had:
        args.append(cur)
    return args


FONT_MACROS = ('B', 'I', 'BI', 'IB', 'BR', 'RB', 'IR', 'RI')


def synopsis_lines(page_text):
    """The SYNOPSIS of a page as plain text lines (roff pieces joined)."""
    raw = page_text.split('\n')
    # Join continuation lines ending in a lone backslash.
    lines, acc = [], ''
    for line in raw:
        if line.endswith('\\') and not line.endswith('\\\\'):
            acc += line[:-1]
            continue
        lines.append(acc + line)
        acc = ''
    out, inside = [], False
    for line in lines:
        if line.startswith('.SH'):
            inside = line.split(None, 1)[1:] == ['SYNOPSIS']
            continue
        if not inside or line.startswith('.\\"'):
            continue
        m = re.match(r'\.(\w+)\s*(.*)$', line)
        if m is None:
            out.append(roff_text(line))
            continue
        macro, rest = m.group(1), m.group(2)
        if macro in ('B', 'I'):
            out.append(roff_text(' '.join(roff_args(rest))))
        elif macro in FONT_MACROS:
            out.append(roff_text(''.join(roff_args(rest))))
    return out


def synopsis_prototypes(page_text, typedefs):
    """[(text, signature)] of the prototypes in a page's SYNOPSIS."""
    protos = []
    for text in synopsis_lines(page_text):
        t = norm_space(text)
        m = re.match(r'^typedef (.+?)\(\s*\*\s*(\w+)\)\((.*)\);$', t)
        if m:
            protos.append((text, 'typedef',
                           signature(m.group(1), m.group(2), m.group(3),
                                     typedefs)))
            continue
        m = re.match(r'^(.*?)\b(rmq_\w+)\((.*)\);$', t)
        if m and m.group(1).strip():
            protos.append((text, 'function',
                           signature(m.group(1), m.group(2), m.group(3),
                                     typedefs)))
    return protos


def so_target(page_text):
    for line in page_text.split('\n'):
        if line.startswith('.so '):
            return line.split(None, 1)[1].strip()
        if line.strip() and not line.startswith('.\\"'):
            return None
    return None


def meson_pages(path):
    text = open(path, encoding='utf-8').read()
    m = re.search(r'man_pages\s*=\s*\[(.*?)\]', text, flags=re.S)
    if m is None:
        return None
    body = re.sub(r'#[^\n]*', '', m.group(1))
    return re.findall(r"'([^']+)'", body)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write('usage: man_check.py SOURCE_ROOT\n')
        return 2
    root = argv[1]
    mandir = os.path.join(root, 'man')
    problems = []

    sigs, fsigs, typedefs = read_header(os.path.join(root, 'include',
                                                     'rmq.h'))
    if not sigs:
        problems.append('include/rmq.h: no RMQ_API function found')

    pages = {}
    for f in sorted(os.listdir(mandir)):
        if f.endswith('.in'):
            pages[f[:-3]] = open(os.path.join(mandir, f),
                                 encoding='utf-8').read()

    # (c) .so targets, and where each page resolves to.
    resolved = {}
    for name, text in pages.items():
        target = so_target(text)
        if target is None:
            resolved[name] = name
            continue
        tname = os.path.basename(target)
        if tname not in pages:
            problems.append('man/%s.in: .so %s: no page man/%s.in'
                            % (name, target, tname))
        elif so_target(pages[tname]) is not None:
            problems.append('man/%s.in: .so %s is itself a .so page'
                            % (name, target))
        else:
            want = 'man%s/' % tname.rsplit('.', 1)[-1]
            if not target.startswith(want):
                problems.append('man/%s.in: .so %s: expected %s%s'
                                % (name, target, want, tname))
            resolved[name] = tname

    # (b) every SYNOPSIS prototype matches the header; collect who shows
    # which function.
    shown = {}
    for name, text in pages.items():
        if resolved.get(name) != name:
            continue
        for line, kind, sig in synopsis_prototypes(text, typedefs):
            fname = sig[1]
            table = sigs if kind == 'function' else fsigs
            if fname not in table:
                problems.append('man/%s.in: SYNOPSIS shows %s %s, which '
                                'include/rmq.h does not declare: %s'
                                % (name, kind, fname, line.strip()))
                continue
            if sig != table[fname]:
                problems.append('man/%s.in: SYNOPSIS %s\n    page:   %s\n'
                                '    rmq.h:  %s'
                                % (name, fname, show(sig),
                                   show(table[fname])))
            shown.setdefault(fname, set()).add(name)

    # (a) every function has a page, which shows its prototype.
    for fname in sorted(sigs):
        page = fname + '.3'
        if page not in pages:
            problems.append('include/rmq.h: %s has no page man/%s.in'
                            % (fname, page))
            continue
        target = resolved.get(page)
        if target is None:
            continue
        if target not in shown.get(fname, set()):
            problems.append('man/%s.in: %s is not in the SYNOPSIS of '
                            'man/%s.in' % (page, fname, target))

    # (d) man/meson.build lists exactly the pages there are.
    listed = meson_pages(os.path.join(mandir, 'meson.build'))
    if listed is None:
        problems.append('man/meson.build: no man_pages list')
        listed = []
    for page in listed:
        if page not in pages:
            problems.append('man/meson.build: %s listed, but man/%s.in '
                            'does not exist' % (page, page))
    if len(set(listed)) != len(listed):
        problems.append('man/meson.build: a page is listed twice')
    for page in sorted(pages):
        if page not in listed:
            problems.append('man/%s.in is not listed in man/meson.build'
                            % page)

    # (e) dated, versioned .TH lines.
    for name, text in sorted(pages.items()):
        if resolved.get(name) != name:
            continue
        th = [l for l in text.split('\n') if l.startswith('.TH ')]
        if len(th) != 1:
            problems.append('man/%s.in: expected one .TH line' % name)
        elif '@DATE@' not in th[0] or '@VERSION@' not in th[0]:
            problems.append('man/%s.in: .TH line lacks @DATE@ or '
                            '@VERSION@: %s' % (name, th[0]))

    # (f) options, types and flags, each where a user looks for it.
    hdr = strip_c_comments(open(os.path.join(root, 'include', 'rmq.h'),
                                encoding='utf-8').read())
    sock = pages.get('rmq_socket.3', '')
    for enum, what in (('rmq_opt', 'option'), ('rmq_type', 'type')):
        m = re.search(r'enum\s+%s\s*\{(.*?)\}' % enum, hdr, re.S)
        names = re.findall(r'\b(RMQ_[A-Z0-9_]+)\s*=', m.group(1)) if m \
            else []
        if not names:
            problems.append('include/rmq.h: no enum %s' % enum)
        for n in names:
            if what == 'option':
                entry = re.search(r'^\.TP\n\.BR? (?:[^\n]*[ "])?%s\b' % n,
                                  sock, re.M)
            else:
                i = sock.find('.SS rmq_socket_open')
                j = sock.find('.SS', i + 1)
                entry = re.search(r'\b%s\b' % n, sock[i:j])
            if not entry:
                problems.append('man/rmq_socket.3.in: socket %s %s is not '
                                'described' % (what, n))
    for n in re.findall(r'#define\s+(RMQ_(?:DONTWAIT|SNDMORE))\b', hdr):
        if not re.search(r'\b%s\b' % n, pages.get('rmq_send.3', '')):
            problems.append('man/rmq_send.3.in: flag %s is not described'
                            % n)

    for p in problems:
        print(p)
    if problems:
        print('man_check: %d problem(s)' % len(problems))
        return 1
    print('man_check: %d functions, %d pages: ok' % (len(sigs), len(pages)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
