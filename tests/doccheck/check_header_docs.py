#!/usr/bin/env python3
"""Every public declaration of the C and C++ headers has a comment right above it.

    check_header_docs.py HEADER...            # exit 0: all documented; 1: the list of those not
    check_header_docs.py --teeth HEADER...    # the check fails when a comment is taken away

The rule, precisely (the same for dlbridge.h and every C++ header of core/include/dlbridge/):

What is checked (a "declaration"):
  - every statement at file scope, inside `extern "C" { }`, or inside a namespace (any namespace,
    `detail` included: its classes hold members that public classes inherit): functions
    (`DLB_API` declarations, inline and template functions), typedefs, `using` aliases,
    classes, structs and unions, variables and constants;
  - every member declared in the public part of a class, struct or union (fields, member
    functions, constructors, operators, friends, nested aliases), and in its protected part
    (a user's derived class can reach those), C structs' fields included;
  - every object-like or function-like macro whose name starts with `DLB_`, at its first
    `#define` (the export macro DLB_API is defined in several branches of one #if).
What is not:
  - private members; the members of a class template's (partial or explicit) specialization,
    which restate its primary template's documented members (the specialization itself is
    checked); anything inside a function body or an initializer; namespaces themselves and
    `extern "C"` blocks; forward declarations (`class Tensor;`: the definition is checked);
    `static_assert`, `using namespace`, `friend class`; include guards (macros that do not
    start with DLB_); the enumerators of an enum (the headers have none: codes are integers).

When a declaration is documented: its first line (for a template, the `template <...>` line)
  (a) has a comment of its own after the code (`#define DLB_X 1 /* what */`), which is not a
      lint directive (NOLINT...); or
  (b) has right above it (no blank line between; lines with #if, #ifdef, #ifndef, #elif, #else
      or #endif are skipped over) a line that holds only a comment, which is not a banner (a
      comment of only '=', '-', '*' and '/' characters) and not a lint directive (NOLINT...); or
  (c) has right above it the last line of another documented declaration of the same scope: a
      run of declarations with no blank line or other line between them shares the comment of
      the first (a list of constants, a constructor and its deleted copies, a field list).
A comment is C's /* ... */ or C++'s // ...; nothing is asked of its contents.

With --teeth, the check of each untouched header must pass; then, in copies in a temporary
folder, each of three declarations (the first, middle and last of the header documented by rule
(b) alone, with a blank line before the comment so that rule (c) cannot cover it) loses its
comment, and the check of that copy must fail and name that declaration. The exit status is 0
only when all of this holds.
"""

import os
import re
import sys
import tempfile

CONDITIONAL = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b")
DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)")
BANNER = re.compile(r"^[=\-*/\s]*$")
LINT = re.compile(r"^\s*NOLINT")


class Source:
    """A header split into code (comments, literals and preprocessor lines blanked out) and
    per-line facts about its comments."""

    def __init__(self, text):
        self.text = text
        self.lines = text.split("\n")
        n = len(text)
        code = list(text)
        # For each line: comment text found on it, whether code precedes a comment that starts
        # on it, whether a comment ends on it.
        nlines = len(self.lines)
        self.comment_text = [""] * (nlines + 1)
        self.trailing = [""] * (nlines + 1)
        self.has_code = [False] * (nlines + 1)
        self.preproc = [False] * (nlines + 1)
        line = 1
        i = 0
        at_line_start = True
        line_code_seen = False
        while i < n:
            c = text[i]
            if c == "\n":
                line += 1
                i += 1
                at_line_start = True
                line_code_seen = False
                continue
            if at_line_start and c in " \t":
                i += 1
                continue
            if at_line_start and c == "#":
                # A preprocessor directive, with its continuation lines and a block comment
                # that starts on it and ends on a later line: blanked out of the code. Its
                # comments count as comments after code (rule (a)).
                first = line
                j = i
                while j < n:
                    if text.startswith("/*", j):
                        end = text.find("*/", j + 2)
                        end = n if end < 0 else end + 2
                        self._comment(text[j:end], line, trailing=True)
                        line += text.count("\n", j, end)
                        j = end
                        continue
                    if text.startswith("//", j):
                        end = text.find("\n", j)
                        end = n if end < 0 else end
                        self._comment(text[j:end], line, trailing=True)
                        j = end
                        continue
                    if text[j] == "\n":
                        if text[j - 1] == "\\":
                            line += 1
                            j += 1
                            continue
                        break
                    j += 1
                for p in range(i, j):
                    if code[p] != "\n":
                        code[p] = " "
                for k in range(first, line + 1):
                    self.preproc[k] = True
                i = j
                at_line_start = False
                continue
            at_line_start = False
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                end = n if end < 0 else end + 2
                self._comment(text[i:end], line, trailing=line_code_seen)
                for p in range(i, end):
                    if text[p] == "\n":
                        line += 1
                    else:
                        code[p] = " "
                i = end
                continue
            if text.startswith("//", i):
                end = text.find("\n", i)
                end = n if end < 0 else end
                if line_code_seen:
                    self.trailing[line] += text[i:end]
                self.comment_text[line] += text[i:end]
                for p in range(i, end):
                    code[p] = " "
                i = end
                continue
            if c in "\"'":
                j = i + 1
                while j < n and text[j] != c:
                    j += 2 if text[j] == "\\" else 1
                for p in range(i + 1, min(j, n)):
                    if code[p] != "\n":
                        code[p] = " "
                i = j + 1
                self.has_code[line] = True
                line_code_seen = True
                continue
            if not c.isspace():
                self.has_code[line] = True
                line_code_seen = True
            i += 1
        self.code = "".join(code)
        # Line number of each offset.
        self.line_starts = [0]
        for k, ch in enumerate(text):
            if ch == "\n":
                self.line_starts.append(k + 1)

    def _comment(self, body, line, trailing):
        """Records a comment that starts on `line` (after code there when `trailing`)."""
        if trailing:
            self.trailing[line] += body
        for k, part in enumerate(body.split("\n")):
            self.comment_text[line + k] += part

    def line_of(self, offset):
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def comment_only(self, line):
        """The line holds a comment and no code (a preprocessor line is code)."""
        return (self.comment_text[line].strip() != "" and not self.has_code[line]
                and not self.preproc[line])

    def is_doc_comment(self, text):
        body = text.strip()
        for mark in ("/*", "*/", "//"):
            body = body.replace(mark, " ")
        return not BANNER.match(body) and not LINT.match(body)


class Decl:
    def __init__(self, name, first, last, scope_id):
        self.name = name
        self.first = first
        self.last = last
        self.scope_id = scope_id
        self.documented = False


class Scope:
    def __init__(self, kind, name="", access="public", specialization=False, saved=None,
                 head="", inner=False):
        self.kind = kind  # file, ns, linkage, class, body, enum
        self.name = name
        self.access = access
        self.specialization = specialization
        self.saved = saved  # the enclosing statement, resumed when this scope closes
        self.head = head
        self.inner = inner  # braces inside parentheses: part of the enclosing statement
        self.depth = 1


def skip_template_prefix(head):
    h = head.lstrip()
    while h.startswith("template"):
        k = h.find("<")
        if k < 0:
            return h
        depth = 0
        for p in range(k, len(h)):
            if h[p] == "<":
                depth += 1
            elif h[p] == ">":
                depth -= 1
                if depth == 0:
                    h = h[p + 1:].lstrip()
                    break
        else:
            return h
    return h


def top_level(text):
    """The text with everything inside (), [] and <> after a name blanked, for searching."""
    out = []
    depth = 0
    for ch in text:
        if ch in "([":
            depth += 1
            out.append(ch if depth == 1 else " ")
        elif ch in ")]":
            depth -= 1
            out.append(ch if depth == 0 else " ")
        else:
            out.append(ch if depth == 0 else " ")
    return "".join(out)


CLASS_HEAD = re.compile(r"^(?:typedef\s+)?(class|struct|union|enum)(?:\s+(?:class|struct))?"
                        r"(?:\s+\[\[[^\]]*\]\])?\s+(\w+)\s*(<)?")


def classify(head):
    h = skip_template_prefix(head)
    if re.match(r"^extern\s*\"", h):
        return "linkage", ""
    m = re.match(r"^(?:inline\s+)?namespace\b\s*([\w:]*)", h)
    if m:
        return "ns", m.group(1)
    m = CLASS_HEAD.match(h)
    if m and "(" not in top_level(h[: m.end()]):
        kind = "enum" if m.group(1) == "enum" else "class"
        return kind, m.group(2)
    m = re.match(r"^(?:typedef\s+)?(class|struct|union|enum)\s*\{?$", h.strip())
    if m:  # an anonymous struct or union
        return ("enum" if m.group(1) == "enum" else "class"), ""
    return "body", ""


def decl_name(head):
    h = skip_template_prefix(head).strip()
    h = re.sub(r"\[\[[^\]]*\]\]", " ", h).strip()
    if h.startswith("typedef"):
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)", h)
        if m:
            return m.group(1)
        ids = re.findall(r"\w+", re.sub(r"\[[^\]]*\]", "", h))
        return ids[-1] if ids else h
    m = CLASS_HEAD.match(h)
    if m:
        return m.group(2)
    m = re.match(r"^using\s+(\w+)\s*=", h)
    if m:
        return m.group(1)
    m = re.search(r"\boperator\s*(\(\)|[^\w\s(]+|\s+[\w:<>]+)\s*\(", h)
    if m:
        return "operator" + m.group(1).strip() if not m.group(1)[0].isspace() \
            else "operator " + m.group(1).strip()
    flat = top_level(h)
    paren = flat.find("(")
    eq = -1
    for m in re.finditer(r"(?<![=!<>])=(?!=)", flat):
        eq = m.start()
        break
    if paren >= 0 and (eq < 0 or paren < eq):
        m = re.match(r"\(\s*\*\s*(\w+)\s*\)", h[paren:])
        if m:  # a pointer to a function: `dlb_status (*allocate)(...)`
            return m.group(1)
        m = re.search(r"(~?\w+)\s*$", flat[:paren])
        return m.group(1) if m else h
    cut = len(flat)
    for ch in ("=", "[", "{"):
        k = flat.find(ch)
        if 0 <= k < cut:
            cut = k
    ids = re.findall(r"~?\w+", flat[:cut])
    return ids[-1] if ids else h


SKIPPED = re.compile(r"^(static_assert\b|using\s+namespace\b|friend\s+(class|struct)\b)")
FORWARD = re.compile(r"^(class|struct|union)\s+\w+\s*$")


def declarations(src):
    """The checked declarations of a header, in order."""
    code = src.code
    n = len(code)
    decls = []
    stack = [Scope("file")]
    scope_ids = {id(stack[0]): 0}
    next_scope = [1]
    stmt = None  # [start offset, paren depth]

    def scope_id(scope):
        if id(scope) not in scope_ids:
            scope_ids[id(scope)] = next_scope[0]
            next_scope[0] += 1
        return scope_ids[id(scope)]

    def qualified(name):
        parts = [s.name for s in stack if s.kind in ("ns", "class") and s.name]
        return "::".join(parts + [name])

    def finish(start, end, last=None, forward_ok=False):
        scope = stack[-1]
        head = code[start:end].strip()
        if not head:
            return
        if scope.kind == "class" and (scope.access == "private" or scope.specialization):
            return
        bare = skip_template_prefix(head)
        if SKIPPED.match(bare) or (forward_ok and FORWARD.match(bare)):
            return
        decls.append(Decl(qualified(decl_name(head)), src.line_of(start),
                          src.line_of(end if last is None else last), scope_id(scope)))

    i = 0
    while i < n:
        c = code[i]
        scope = stack[-1]
        if scope.kind in ("body", "enum"):
            # Opaque: only the braces are matched.
            if c == "{":
                scope.depth += 1
            elif c == "}":
                scope.depth -= 1
                if scope.depth == 0:
                    stack.pop()
                    stmt = scope.saved
                    if scope.kind == "body" and not scope.inner and stmt[2] == "open":
                        if "(" in top_level(code[stmt[0]:scope.head_end]):
                            # A function's body ends its statement; an initializer's does not.
                            finish(stmt[0], scope.head_end, last=i)
                            stmt = None
            i += 1
            continue
        if stmt is None:
            if c.isspace() or c == ";":
                i += 1
                continue
            if c == "}":
                closed = stack.pop()
                stmt = closed.saved
                i += 1
                continue
            if scope.kind == "class":
                m = re.match(r"(public|private|protected)\s*:(?!:)", code[i:i + 20])
                if m:
                    scope.access = m.group(1)
                    i += m.end()
                    continue
            stmt = [i, 0, "open"]
        if c == "(":
            stmt[1] += 1
        elif c == ")":
            stmt[1] -= 1
        elif c == "{":
            if stmt[1] > 0 or stmt[2] != "open":
                inner = Scope("body", saved=stmt, inner=True)
                stack.append(inner)
                i += 1
                continue
            head = code[stmt[0]:i]
            kind, name = classify(head)
            if kind == "class":
                m = CLASS_HEAD.match(skip_template_prefix(head))
                spec = bool(m and m.group(3))
                access = "private" if m and m.group(1) == "class" else "public"
                # The class is a declaration of the enclosing scope, recorded before its
                # members; after its closing brace the statement's declarators (`} dlb_error;`)
                # belong to it and are not recorded again.
                finish(stmt[0], i)
                stmt[2] = "tail"
                new = Scope("class", name=name, access=access, specialization=spec, saved=stmt)
                stmt = None
            elif kind in ("ns", "linkage"):
                new = Scope(kind, name=name, saved=None)
                stmt = None
            else:
                new = Scope(kind, name=name, saved=stmt)
                if kind == "enum":
                    finish(stmt[0], i)
                    stmt[2] = "tail"
            new.head_end = i
            stack.append(new)
            i += 1
            continue
        elif c == ";" and stmt[1] == 0:
            if stmt[2] == "open":
                finish(stmt[0], i, forward_ok=True)
            stmt = None
        i += 1
    return decls


def macros(src):
    seen = set()
    out = []
    for k, text in enumerate(src.lines, start=1):
        m = DEFINE.match(text)
        if m and m.group(1).startswith("DLB_") and m.group(1) not in seen:
            seen.add(m.group(1))
            out.append(Decl(m.group(1), k, k, -1))
    return out


def documented_alone(src, line):
    """Rules (a) and (b) for a declaration whose first line is `line`."""
    lead = src.trailing[line]
    if lead.strip() and src.is_doc_comment(lead):
        return True
    above = line - 1
    while above >= 1 and CONDITIONAL.match(src.lines[above - 1]):
        above -= 1
    if above < 1:
        return False
    return src.comment_only(above) and src.is_doc_comment(src.comment_text[above])


def check(path):
    """The declarations of the header at `path` that have no comment, as messages."""
    with open(path, encoding="utf-8") as f:
        src = Source(f.read())
    decls = declarations(src) + macros(src)
    decls.sort(key=lambda d: d.first)
    last_line = {}
    for d in decls:
        d.documented = documented_alone(src, d.first)
        above = d.first - 1
        while above >= 1 and CONDITIONAL.match(src.lines[above - 1]):
            above -= 1
        prev = last_line.get((d.scope_id, above))
        if not d.documented and prev is not None and prev.documented:
            d.documented = True
        last_line[(d.scope_id, d.last)] = d
    name = os.path.basename(path)
    return ["%s:%d: %s has no comment right above it" % (name, d.first, d.name)
            for d in decls if not d.documented], decls, src


def removable_comments(src, decls):
    """(declaration, first line, last line) of each comment that documents a declaration by
    rule (b) alone: it starts a line, and a blank line precedes it (rule (c) cannot apply)."""
    out = []
    for d in decls:
        above = d.first - 1
        if src.trailing[d.first].strip() or above < 2 or not src.comment_only(above):
            continue
        start = above
        while not src.lines[start - 1].lstrip().startswith(("/*", "//")):
            start -= 1
            if start < 1 or not src.comment_only(start):
                break
        if start >= 2 and src.comment_only(start) and src.lines[start - 2].strip() == "":
            out.append((d, start, above))
    return out


def teeth(paths):
    """For each header: the check passes, and fails naming the declaration when one comment is
    removed (three copies: the first, middle and last such comment of the header)."""
    ok = True
    for path in paths:
        missing, decls, src = check(path)
        if missing:
            print("teeth: %s must pass first:\n  %s" % (path, "\n  ".join(missing)))
            ok = False
            continue
        candidates = removable_comments(src, decls)
        if not candidates:
            print("teeth: no comment to remove in %s" % path)
            ok = False
            continue
        picks = sorted({0, len(candidates) // 2, len(candidates) - 1})
        for k in picks:
            d, start, end = candidates[k]
            lines = list(src.lines)
            del lines[start - 1:end]
            with tempfile.TemporaryDirectory() as tmp:
                copy = os.path.join(tmp, os.path.basename(path))
                with open(copy, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines))
                found, _, _ = check(copy)
            named = [m for m in found if m.endswith(" %s has no comment right above it" % d.name)]
            if named:
                print("teeth: %s without the comment of %s (lines %d-%d) fails: %s"
                      % (os.path.basename(path), d.name, start, end, named[0]))
            else:
                print("teeth: %s without the comment of %s (lines %d-%d) does not fail naming"
                      " it: %s" % (os.path.basename(path), d.name, start, end, found))
                ok = False
    return ok


def main(argv):
    args = argv[1:]
    if args and args[0] == "--teeth":
        ok = teeth(args[1:])
        print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
        return 0 if ok else 1
    if not args:
        print(__doc__)
        return 2
    failures = []
    total = 0
    for path in args:
        missing, decls, _ = check(path)
        total += len(decls)
        failures += missing
    for m in failures:
        print(m)
    print("%d declarations in %d headers, %d without a comment" % (total, len(args), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
