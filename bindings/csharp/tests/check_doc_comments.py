#!/usr/bin/env python3
"""The C# documentation check has teeth (suite csharp, test csharp-doc-comments).

usage: check_doc_comments.py MCS --flags FLAG... --mutate SOURCE... --also FILE...

DLBridge.dll is compiled with -doc and every warning as an error, so a public type or member
without a /// comment fails the build with CS1591. This test compiles copies of the assembly's
sources with the build's own FLAGs (and -doc):

  1. unchanged: must compile (the check passes on the tree as it is);
  2. for each SOURCE in --mutate: the first /// comment that documents a public item removed,
     everything else unchanged: must fail with CS1591 at that item's line of that file.

--also names the other inputs of the compile (generated files), compiled unchanged. The last
line is "N passed, N failed".
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

PUBLIC = re.compile(r'^\s*(\[[^\]]*\]\s*)*public\s')


def parse(argv):
    mcs, groups, key = argv[1], {'--flags': [], '--mutate': [], '--also': []}, None
    for arg in argv[2:]:
        if arg in groups:
            key = arg
        elif key is None:
            sys.exit('check_doc_comments.py: expected --flags, --mutate or --also before ' + arg)
        else:
            groups[key].append(arg)
    if not groups['--flags'] or not groups['--mutate']:
        sys.exit(__doc__)
    return mcs, groups['--flags'], groups['--mutate'], groups['--also']


def first_public_doc(lines):
    """(start, end, decl) of the first run of /// lines followed (past attributes) by a public
    declaration: lines[start:end] are the comment, lines[decl] the declaration. None if none."""
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith('///'):
            start = i
            while i < len(lines) and lines[i].lstrip().startswith('///'):
                i += 1
            end = decl = i
            while decl < len(lines) and lines[decl].lstrip().startswith('['):
                decl += 1  # attributes between the comment and the declaration
            if decl < len(lines) and PUBLIC.match(lines[decl]):
                return start, end, decl
        else:
            i += 1
    return None


def compile_copy(mcs, flags, sources, work):
    out = os.path.join(work, 'out')
    os.makedirs(out, exist_ok=True)
    cmd = [mcs] + flags + ['-doc:' + os.path.join(out, 'DLBridge.xml'),
                           '-out:' + os.path.join(out, 'DLBridge.dll')] + sources
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work)
    return proc.returncode, proc.stdout


def main(argv):
    mcs, flags, mutate, also = parse(argv)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix='dlb-cs-doc-') as tmp:
        src = os.path.join(tmp, 'src')
        os.makedirs(src)
        copies = []
        for path in mutate:
            copy = os.path.join(src, os.path.basename(path))
            shutil.copy(path, copy)
            copies.append(copy)
        sources = copies + [os.path.abspath(p) for p in also]

        rc, output = compile_copy(mcs, flags, sources, tmp)
        if rc == 0:
            print('ok    the sources as they are compile with -doc and CS1591 as an error')
            passed += 1
        else:
            print('FAIL  the sources as they are do not compile:\n' + output)
            failed += 1

        cases = 0
        for copy in copies:
            name = os.path.basename(copy)
            with open(copy) as f:
                original = f.read()
            lines = original.split('\n')
            found = first_public_doc(lines)
            if found is None:
                continue  # no documented public item here (internal code only)
            cases += 1
            start, end, decl = found
            removed = lines[:start] + lines[end:]
            line = decl - (end - start) + 1  # 1-based line of the declaration in the copy
            with open(copy, 'w') as f:
                f.write('\n'.join(removed))
            rc, output = compile_copy(mcs, flags, sources, tmp)
            with open(copy, 'w') as f:
                f.write(original)
            where = '%s(%d,' % (name, line)
            hit = [l for l in output.splitlines() if 'CS1591' in l and where in l]
            what = '%s:%d %s' % (name, decl + 1, lines[decl].strip())
            if rc != 0 and hit:
                print('ok    without its comment, %s fails: %s' % (what, hit[0].strip()))
                passed += 1
            else:
                print('FAIL  without its comment, %s: exit %d, no CS1591 at %s\n%s'
                      % (what, rc, where, output))
                failed += 1
        if cases == 0:
            print('FAIL  no source has a documented public item to remove')
            failed += 1
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
