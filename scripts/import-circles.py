#!/usr/bin/env python3
"""Fails when modules of a crate import each other in a circle.

Reads every `use crate::…`/`use super::…`/`use self::…` path (and `use
child::…` in a module with that child), and inline `crate::…`/`super::…`
paths, of each file under the given `src` folders, outside comments and
`#[cfg(test)] mod tests`. A path is resolved to the file of its longest
module prefix; when the rest of the path names an item that file imports or
re-exports (`pub use links::Link` in `store/mod.rs`), it follows that import
to the file that defines the item, so a re-export does not hide who depends
on whom.

Two rules, both must hold:

1. Files. No strongly connected group of files (Tarjan). A module and its
   own parent (the `mod.rs` declaring it, at any depth) are not a circle.

2. Folders. At every folder of the module tree (`src/` itself included),
   its children must not import each other in a circle. A child is a file
   (`teams.rs`) or a folder counted as one unit with everything under it
   (`store/`, with `store.rs` when the folder has one instead of
   `mod.rs`). So `auth/` using the store while `store/` uses
   `auth::Role` is a circle, whichever files the imports are in; so are
   `store/sqlite/` and `store/postgres/` importing each other, or a folder
   and a file beside it (`codes.rs` using `store::Link` while
   `store/links/` uses `codes::CodeRef`). A folder's own file (`mod.rs`,
   `lib.rs`) belongs to none of its children: a parent declaring, using or
   re-exporting its children, and children using what the parent itself
   defines, is the normal Rust shape, not a circle. Items the parent
   re-exports count where they are defined (above), so `store/sqlite/`
   using `store::StoreError` is an import of `store/error.rs`.

Usage: scripts/import-circles.py core/src daemon/src nginx-module/src
"""
import os
import re
import sys


def module_of(src, path):
    parts = os.path.relpath(path, src)[:-3].split("/")
    return tuple(parts[:-1]) if parts[-1] in ("mod", "lib", "main") else tuple(parts)


def code_of(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"#\[cfg\(test\)\]\s*mod tests \{.*", "", text, flags=re.S)


def split_top(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [x.strip() for x in out + [cur] if x.strip()]


def use_tree(tree, prefix=()):
    """The paths of one `use` tree, each with the name it brings in."""
    tree = tree.strip()
    if tree.endswith("}") and "{" in tree:
        i = tree.index("{")
        base = tuple(s for s in tree[:i].split("::") if s)
        found = []
        for item in split_top(tree[i + 1 : -1]):
            found += use_tree(item, prefix + base)
        return found
    name = None
    if " as " in tree:
        tree, name = [x.strip() for x in tree.split(" as ")]
    segs = tuple(s for s in tree.split("::") if s)
    if segs == ("self",):
        return [(prefix, name or (prefix[-1] if prefix else None))]
    if segs and segs[-1] == "*":
        return [(prefix + segs[:-1], None)]
    return [(prefix + segs, name or (segs[-1] if segs else None))]


def uses(code):
    """(path, name) for every `use` of a file."""
    found = []
    for tree in re.findall(r"\buse\s+([^;]+);", code):
        found += use_tree(re.sub(r"\s+", " ", tree))
    return found


class Crate:
    def __init__(self, src):
        self.files = {}
        for d, _, names in os.walk(src):
            for n in sorted(names):
                # A crate with a library has a thin `main.rs` of its own (a
                # second crate, using the library by name).
                if n.endswith(".rs") and not (d == src and n == "main.rs" and "lib.rs" in names):
                    self.files[module_of(src, os.path.join(d, n))] = os.path.join(d, n)
        self.code = {m: code_of(open(p).read()) for m, p in self.files.items()}
        self.names = {}
        for m in self.files:
            for path, name in uses(self.code[m]):
                absolute = self.absolute(m, path)
                if name and absolute is not None:
                    self.names.setdefault(m, {})[name] = absolute

    def absolute(self, m, path):
        """`path` used in module `m` as a path from the crate root, or None
        for a path outside the crate."""
        here = list(m)
        if not path:
            return None
        if path[0] == "crate":
            return tuple(path[1:])
        if path[0] == "self":
            return tuple(here) + tuple(path[1:])
        if path[0] == "super":
            while path and path[0] == "super":
                here = here[:-1]
                path = path[1:]
            return tuple(here) + tuple(path)
        if tuple(here) + (path[0],) in self.files:
            return tuple(here) + tuple(path)
        return None

    def resolve(self, target, depth=0):
        """The file module that defines what `target` names."""
        for i in range(len(target), -1, -1):
            m = tuple(target[:i])
            if m in self.files:
                rest = target[i:]
                if rest and depth < 16:
                    via = self.names.get(m, {}).get(rest[0])
                    if via is not None and via != target:
                        return self.resolve(via + tuple(rest[1:]), depth + 1)
                return m
        return None

    def edges(self):
        edges = {m: set() for m in self.files}
        for m in self.files:
            code = self.code[m]
            paths = [p for p, _ in uses(code)]
            paths += [
                tuple(p.split("::"))
                for p in re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", code)
            ]
            for p in paths:
                target = self.absolute(m, p)
                if target is None:
                    continue
                to = self.resolve(target)
                if to is not None and to != m:
                    edges[m].add(to)
        return edges


def related(a, b):
    return a[: len(b)] == b or b[: len(a)] == a


def strongly_connected(nodes, edges, skip=lambda v, w: False):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if skip(v, w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def file_circles(crate, edges):
    return strongly_connected(crate.files, edges, related)


def folder_circles(crate, edges):
    """(folder, [children in a circle], {(a, b): (file, file)}) for every
    folder whose children import each other in a circle."""
    folders = {m[:i] for m in crate.files for i in range(len(m))}
    found = []
    for folder in sorted(folders):
        depth = len(folder)

        def child(m):
            if len(m) > depth and m[:depth] == folder:
                return m[: depth + 1]
            return None

        between, why = {}, {}
        for a, targets in sorted(edges.items()):
            ca = child(a)
            if ca is None:
                continue
            for b in sorted(targets):
                cb = child(b)
                if cb is not None and cb != ca:
                    between.setdefault(ca, set()).add(cb)
                    why.setdefault((ca, cb), (a, b))
        for group in strongly_connected(between, between):
            found.append((folder, group, why))
    return found


def name(m):
    return "/".join(m) or "lib"


def main():
    bad = 0
    for src in sys.argv[1:]:
        crate = Crate(src)
        edges = crate.edges()
        for group in file_circles(crate, edges):
            bad += 1
            print(f"{src}: files import each other in a circle: {' <-> '.join(map(name, group))}")
        for folder, group, why in folder_circles(crate, edges):
            bad += 1
            units = [name(m) + ("/" if any(f[: len(m)] == m and f != m for f in crate.files) else "") for m in group]
            print(f"{src}: modules of {name(folder) if folder else 'the crate root'} import each other in a circle: {' <-> '.join(units)}")
            members = set(group)
            for (a, b), (fa, fb) in sorted(why.items()):
                if a in members and b in members:
                    print(f"    {name(a)} -> {name(b)}: {name(fa)} uses {name(fb)}")
    if bad:
        sys.exit(1)
    print(f"no import circles in {', '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
