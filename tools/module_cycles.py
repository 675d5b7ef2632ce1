#!/usr/bin/env python3
"""Import circles between the modules of one Rust crate.

    tools/module_cycles.py debugger/audit/src [more src dirs...]

For each crate root in a src dir (lib.rs, main.rs), the modules are found from their `mod`
declarations, and an edge A -> B is drawn when module A names module B in code:

- a `use` path: `use crate::x::Y`, `use super::Y`, `use self::x::Y`, `use child::Y`;
- a path in code: `crate::x::Y`, `super::x::Y`, `self::x::Y`, or `child::Y` where `child` is a
  module declared in the current scope.

A path goes to the module that defines what it names: `crate::debugger::run::Goal` is the
module `debugger::run`, and a name a module imports or re-exports (`pub use run::Goal` in
`debugger/mod.rs`, `pub use error::AuditError` in `lib.rs`) is followed to where it comes from,
so `crate::AuditError` is the module `error` and a table-of-contents `mod.rs` is no hub. The
module that re-exports depends on the one it re-exports from. Glob imports (`use x::*`) stop
at `x`. Modules declared inline (`mod tests { ... }`) belong to their file: `use super::*` in a
file's test module is that file's own. `mod x;` itself is not a reference. Comments, strings and
`pub(in path)` are skipped.

Every strongly connected component of more than one module is a cycle: it is printed with the
references that close it (file:line), and the exit status is 1. Exit 0: no cycle; 2: bad usage.
Python 3, standard library only.
"""

import os
import re
import sys

IDENT = r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """The source with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        return "".join("\n" if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif re.match(r'(?:b|c)?r(#*)"', text[i:i + 260]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(?:b|c)?r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"' or (c in "bc" and text.startswith('"', i + 1) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + (1 if c == '"' else 2)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(blank(text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{1b}') or a lifetime ('a).
            if text.startswith("\\", i + 1):
                j = text.find("'", i + 2)
                j = n if j < 0 else j + 1
                out.append(blank(text[i:j]))
                i = j
            elif i + 2 < n and text[i + 2] == "'":
                out.append("   ")
                i += 3
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Crate:
    """The modules of one crate root and the references between them."""

    def __init__(self, root_file):
        self.root_file = root_file
        # module path (tuple) -> file; inline modules map to their file too
        self.modules = {(): root_file}
        self.file_module = {root_file: ()}
        # module path (inline included) -> {bound name: (scope, segments)}
        self.bindings = {}
        # (file, file module, scope, segments, line, from a use statement)
        self.refs = []
        # (file module, target module) -> [(file, line)]
        self.edges = {}
        self._load(root_file, ())
        for file, src, scope, segs, line, in_use in self.refs:
            target = self._resolve(scope, segs, in_use)
            dst = None if target is None else self._owner(target)
            if dst is not None and dst != src:
                self.edges.setdefault((src, dst), []).append((file, line))

    # -- module discovery and scanning ---------------------------------------------------

    def _child_file(self, file, inline, name):
        """Where `mod name;` declared in `file` inside inline modules `inline` lives."""
        base = os.path.basename(file)
        d = os.path.dirname(file)
        if base not in ("lib.rs", "main.rs", "mod.rs"):
            d = os.path.join(d, base[:-3])
        d = os.path.join(d, *inline)
        for cand in (os.path.join(d, name + ".rs"), os.path.join(d, name, "mod.rs")):
            if os.path.isfile(cand):
                return cand
        return None

    def _load(self, file, path):
        with open(file, encoding="utf-8") as f:
            raw = f.read()
        text = strip(raw)
        # `pub(in crate::x)` is a visibility, not a reference.
        text = re.sub(r"pub\s*\(\s*in\s+[^)]*\)", lambda m: " " * len(m.group(0)), text)
        decls = []  # (pos, name, inline: bool, brace_pos)
        for m in re.finditer(r"(?<![\w$])mod\s+(" + IDENT + r")\s*([;{])", text):
            name = m.group(1).removeprefix("r#")
            decls.append((m.start(), name, m.group(2) == "{", m.end() - 1))
        # Scopes: walk the braces once, knowing which ones open an inline module.
        opens = {b: name for (_, name, inline, b) in decls if inline}
        changes = [(0, ())]  # (pos, inline scope from there on)
        stack = []  # (name, depth)
        depth = 0
        for i, ch in enumerate(text):
            if ch == "{":
                depth += 1
                if i in opens:
                    stack.append((opens[i], depth))
                    changes.append((i, tuple(s[0] for s in stack)))
            elif ch == "}":
                if stack and stack[-1][1] == depth:
                    stack.pop()
                    changes.append((i, tuple(s[0] for s in stack)))
                depth -= 1

        def scope_at(pos):
            cur = ()
            for p, sc in changes:
                if p > pos:
                    break
                cur = sc
            return path + cur

        for pos, name, inline, _ in decls:
            mod_path = scope_at(pos) + (name,)
            if inline:
                self.modules[mod_path] = file
            else:
                child = self._child_file(file, scope_at(pos)[len(path):], name)
                if child and mod_path not in self.modules:
                    self.modules[mod_path] = child
                    self.file_module[child] = mod_path
                    self._load(child, mod_path)
        line_of = lambda pos: text.count("\n", 0, pos) + 1  # noqa: E731
        code = list(text)
        for m in re.finditer(r"(?<![\w$])use\s+([^;]*);", text):
            scope = scope_at(m.start())
            for segs, bound in use_paths(m.group(1)):
                if bound:
                    self.bindings.setdefault(scope, {})[bound] = (scope, segs)
                self.refs.append((file, path, scope, segs, line_of(m.start()), True))
            # The use tree is read above, leaf by leaf; read as code, `a::b::{C, D}` would name
            # the module `a::b` itself.
            code[m.start():m.end()] = ["\n" if c == "\n" else " " for c in m.group(0)]
        code = "".join(code)
        for m in re.finditer(
            r"(?<![\w$:])(" + IDENT + r")((?:\s*::\s*(?:" + IDENT + r"))+)", code
        ):
            segs = [m.group(1)] + re.findall(IDENT, m.group(2))
            self.refs.append((file, path, scope_at(m.start()), segs, line_of(m.start()), False))

    # -- resolution ----------------------------------------------------------------------

    def _resolve(self, scope, segs, in_use, depth=0):
        """The module that defines what `segs` names from `scope`; None when it is outside
        the crate (or not a path of ours)."""
        segs = [s.removeprefix("r#") for s in segs]
        if not segs or depth > 16:
            return None
        first = segs[0]
        if first == "crate":
            cur, rest = (), segs[1:]
        elif first in ("super", "self"):
            cur, rest = scope, segs
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super":
                    if not cur:
                        return None
                    cur = cur[:-1]
                rest = rest[1:]
        elif scope + (first,) in self.modules:
            cur, rest = scope + (first,), segs[1:]
        elif not in_use and first in self.bindings.get(scope, {}):
            # `Goal::Entry` after `use super::run::Goal`: the use statement counts already.
            return None
        else:
            return None
        while rest:
            name = rest[0]
            if cur + (name,) in self.modules:
                cur, rest = cur + (name,), rest[1:]
                continue
            bound = self.bindings.get(cur, {}).get(name)
            if bound is None or bound[1] == segs and bound[0] == scope:
                break
            # A name `cur` imports or re-exports: where it comes from.
            target = self._resolve(bound[0], bound[1], True, depth + 1)
            if target is None:
                return None
            if self._is_module_path(bound[0], bound[1], target):
                cur, rest = target, rest[1:]
                continue
            return target
        return cur

    def _is_module_path(self, scope, segs, target):
        """Whether the use path `segs` names the module `target` itself (not an item in it)."""
        return bool(segs) and segs[-1].removeprefix("r#") == (target[-1] if target else "crate")

    def _owner(self, mod_path):
        """The file module that holds `mod_path` (inline modules belong to their file)."""
        file = self.modules.get(mod_path)
        if file is None:
            return None
        return self.file_module.get(file)

    # -- cycles --------------------------------------------------------------------------

    def cycles(self):
        graph = {}
        for (a, b) in self.edges:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
        return [sorted(c) for c in tarjan(graph) if len(c) > 1]


def use_paths(tree):
    """The leaves of a use tree with the name each binds (`None` for a glob):
    `a::{b, c::d as e, self, x::*}` -> (a::b, b), (a::c::d, e), (a, a), (a::x, None)."""
    tokens = re.findall(IDENT + r"|::|[{},*]", tree)
    pos = 0

    def parse(prefix):
        nonlocal pos
        segs = list(prefix)
        while pos < len(tokens):
            t = tokens[pos]
            if t == "::":
                pos += 1
            elif t == "{":
                pos += 1
                out = []
                while pos < len(tokens) and tokens[pos] != "}":
                    if tokens[pos] == ",":
                        pos += 1
                        continue
                    out.extend(parse(segs))
                pos += 1
                return out
            elif t == "*":
                pos += 1
                return [(segs, None)]
            elif t in (",", "}"):
                break
            elif t == "as":
                alias = tokens[pos + 1] if pos + 1 < len(tokens) else None
                pos += 2
                return [(segs, None if alias == "_" else alias)]
            elif t == "self" and segs:
                pos += 1
                return [(segs, segs[-1])]
            else:
                segs = segs + [t]
                pos += 1
        return [(segs, segs[-1])] if segs else []

    return parse([])


def tarjan(graph):
    """Strongly connected components (iterative Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(comp)
    return out


def name(mod_path):
    return "crate::" + "::".join(mod_path) if mod_path else "crate"


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) < 2 else sys.stdout)
        return 2 if len(argv) < 2 else 0
    found = 0
    for src in argv[1:]:
        roots = [os.path.join(src, r) for r in ("lib.rs", "main.rs")]
        roots = [r for r in roots if os.path.isfile(r)]
        if not roots:
            print(f"{src}: no lib.rs or main.rs", file=sys.stderr)
            return 2
        for root in roots:
            crate = Crate(root)
            cycles = crate.cycles()
            if not cycles:
                print(f"{root}: {len(crate.file_module)} modules, no import cycle")
                continue
            for comp in cycles:
                found += 1
                members = set(comp)
                print(f"{root}: import cycle of {len(comp)} modules: "
                      + ", ".join(name(m) for m in comp))
                for (a, b), where in sorted(crate.edges.items()):
                    if a in members and b in members:
                        f, line = where[0]
                        more = f" (+{len(where) - 1} more)" if len(where) > 1 else ""
                        print(f"    {name(a)} -> {name(b)}  at {f}:{line}{more}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
