#!/usr/bin/env python3
"""Check README.md and the user documentation against the tree.

Usage: readme_check.py SOURCE_ROOT

  (a) README.md has at most 300 lines: it is the front page, and the
      dated runs live in docs/bench/;
  (b) the README's C example is examples/hello.c, byte for byte (the
      first ```c block), so that the example the build compiles and the
      tests run is the one a reader copies;
  (c) every package the README's apt-get lines install is one .ci/run
      installs, so that the README's commands and CI cannot drift apart;
  (d) every relative link in README.md, docs/PERFORMANCE.md,
      docs/TESTING.md and docs/bench/*.md names a file or directory that
      exists;
  (e) every "man NAME" in the README has a page man/NAME.<section>.in.

Prints one line per problem and exits 1 if there is any.  Python 3, no
modules outside the standard library.
"""

import glob
import os
import re
import sys

MAX_LINES = 300
EXAMPLE = os.path.join('examples', 'hello.c')


def read(root, rel):
    with open(os.path.join(root, rel), encoding='utf-8') as f:
        return f.read()


def first_c_block(text):
    m = re.search(r'^```c\n(.*?)^```$', text, flags=re.S | re.M)
    return None if m is None else m.group(1)


def apt_packages(text):
    """Package names after 'apt-get install', up to the next '&&' or
    the end of the command (backslash continuations joined)."""
    text = re.sub(r'\\\n', ' ', text)
    pkgs = set()
    for m in re.finditer(r'apt-get install((?:\s+[^\s&|;>]+)*)', text):
        for word in m.group(1).split():
            if not word.startswith('-'):
                pkgs.add(word)
    return pkgs


def links(text):
    """Relative targets of markdown links [text](target), anchors cut."""
    out = []
    for m in re.finditer(r'\]\(([^)\s]+)\)', text):
        target = m.group(1).split('#', 1)[0]
        if target and not re.match(r'[a-z]+:', target):
            out.append(target)
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write('usage: readme_check.py SOURCE_ROOT\n')
        return 2
    root = argv[1]
    problems = []
    readme = read(root, 'README.md')

    # (a)
    nlines = readme.count('\n')
    if nlines > MAX_LINES:
        problems.append('README.md: %d lines, more than %d'
                        % (nlines, MAX_LINES))

    # (b)
    block = first_c_block(readme)
    if block is None:
        problems.append('README.md: no ```c block (the example)')
    elif block != read(root, EXAMPLE):
        problems.append('README.md: the ```c block differs from %s; '
                        'copy the file into the README' % EXAMPLE)

    # (c)
    ci = apt_packages(read(root, os.path.join('.ci', 'run')))
    if not ci:
        problems.append('.ci/run: no apt-get install line')
    readme_pkgs = apt_packages(readme)
    if not readme_pkgs:
        problems.append('README.md: no apt-get install line')
    for pkg in sorted(readme_pkgs - ci):
        problems.append('README.md installs %s, which .ci/run does not'
                        % pkg)

    # (d)
    docs = ['README.md', os.path.join('docs', 'PERFORMANCE.md'),
            os.path.join('docs', 'TESTING.md')]
    docs += sorted(os.path.relpath(p, root) for p in
                   glob.glob(os.path.join(root, 'docs', 'bench', '*.md')))
    for doc in docs:
        if not os.path.exists(os.path.join(root, doc)):
            problems.append('%s: missing' % doc)
            continue
        base = os.path.dirname(doc)
        for target in links(read(root, doc)):
            if not os.path.exists(os.path.join(root, base, target)):
                problems.append('%s: link to %s, which does not exist'
                                % (doc, target))

    # (e)
    pages = {os.path.basename(p)[:-3].rsplit('.', 1)[0]
             for p in glob.glob(os.path.join(root, 'man', '*.in'))}
    for name in sorted(set(re.findall(r'`man ([\w.]+)`', readme))):
        if name not in pages:
            problems.append('README.md: man %s, but no man/%s.*.in'
                            % (name, name))

    for p in problems:
        print(p)
    if problems:
        print('readme_check: %d problem(s)' % len(problems))
        return 1
    print('readme_check: %d lines, example, %d packages, links, man '
          'pages: ok' % (nlines, len(readme_pkgs)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
