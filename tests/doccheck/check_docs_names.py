#!/usr/bin/env python3
"""The documentation pages name every public C function.

    check_docs_names.py --header dlbridge.h --source ROOT           # the check
    check_docs_names.py --header dlbridge.h --source ROOT --teeth   # and that it can fail

The public C functions are the declarations marked DLB_API in the header (comments are not
read: a function named only in a comment is not a declaration). The pages are README.md and
every docs/*.md of the source tree ROOT. A function is named on a page when its full name
occurs there as a whole word (not inside a longer identifier): `dlb_tensor_copy` in a table,
a sentence or a code block. An abbreviation such as `_copy_async` after another name does not
count. The check prints every function that no page names and fails if there is one.

With --teeth, the check must pass on the tree as it is; then, in a copy of the pages in a
temporary folder, every mention of one function (the first and the last of the header) is
replaced by another word, and the check of that copy must fail and name that function.
"""

import argparse
import glob
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_header_docs import Source  # noqa: E402  (comments and literals blanked out)


def public_functions(header):
    with open(header, encoding="utf-8") as f:
        code = Source(f.read()).code
    return re.findall(r"\bDLB_API\b[^;(]*?(\w+)\s*\(", code)


def pages(root):
    return [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))


def mention(name):
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")


def unnamed(functions, root):
    texts = []
    for page in pages(root):
        if os.path.exists(page):
            with open(page, encoding="utf-8") as f:
                texts.append(f.read())
    return [name for name in functions if not any(mention(name).search(t) for t in texts)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--header", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--teeth", action="store_true")
    args = parser.parse_args()

    functions = public_functions(args.header)
    if len(functions) < 10:
        print("found only %d DLB_API functions in %s: the header's form changed?"
              % (len(functions), args.header))
        print("0 passed, 1 failed")
        return 1
    missing = unnamed(functions, args.source)
    for name in missing:
        print("%s: no page of docs/ nor README.md names it" % name)
    print("%d public C functions, %d pages, %d not named"
          % (len(functions), len(pages(args.source)), len(missing)))
    if not args.teeth:
        return 1 if missing else 0

    ok = not missing
    for victim in sorted({functions[0], functions[-1]}):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "docs"))
            for page in pages(args.source):
                if not os.path.exists(page):
                    continue
                with open(page, encoding="utf-8") as f:
                    text = mention(victim).sub("SCRUBBED", f.read())
                with open(os.path.join(tmp, os.path.relpath(page, args.source)), "w",
                          encoding="utf-8") as f:
                    f.write(text)
            found = unnamed(functions, tmp)
        if found == [victim]:
            print("teeth: the pages without %s fail, naming it" % victim)
        else:
            print("teeth: the pages without %s give %s, not [%s]" % (victim, found, victim))
            ok = False
    print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
