#!/usr/bin/env python3
"""The import graph of each crate's modules: no circle, no arrow pointing up.

Reads every `src/**/*.rs` of the crates named in `scripts/layers.toml`, finds
which module each file's code refers to (`use` declarations and inline paths
such as `crate::a::b::f()`, `super::x`, `self::y`, or a child module's name),
and checks two rules the book's architecture chapter states:

1. no import circle inside a crate (the strongly connected components of the
   module graph are single modules);
2. no module imports one in a higher layer of its crate, as the crate's
   layers in `layers.toml` list them (top first);
3. no function over 80 lines outside tests, in the crates and in the
   `[functions]` folders of `layers.toml` (examples, benchmarks).

What counts as an import: a reference from one module's code to an item that
another module defines. A `pub use` re-export is a facade, not a use: it draws
no arrow itself, and a path through it is followed to the module that defines
the item. Test code (`#[cfg(test)]` items and `tests` modules) is left out.

Usage: python3 scripts/architecture_check.py [--dot CRATE] [--edges CRATE] [--self-test]
(`--self-test` checks, on a small crate it writes, that each rule catches what it is for.)
Exits 1 and names each circle, upward arrow or long function when a rule is
broken.
"""

from __future__ import annotations

import re
import sys
import tempfile

try:
    import tomllib
except ImportError:  # Python before 3.11
    print("scripts/architecture_check.py needs Python 3.11 or later (tomllib)", file=sys.stderr)
    sys.exit(2)
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYWORD_ROOTS = {"crate", "self", "super"}


def strip_comments_and_strings(text: str) -> str:
    """Replaces comments, string and char literals by spaces, keeping newlines."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
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
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:i + 300])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i:i + 16])
            if m:
                out.append(" " * m.end())
                i += m.end()
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text: str, start: int) -> int:
    """The index just past the brace that closes the one at `start`."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def item_end(text: str, start: int) -> int:
    """The end of the item starting at `start`: its `;` or its closing brace."""
    j = start
    while j < len(text):
        if text[j] == ";":
            return j + 1
        if text[j] == "{":
            return matching_brace(text, j)
        j += 1
    return len(text)


TEST_ATTR = re.compile(r"#\[cfg\((test|all\(test[^\]]*|any\(test[^\]]*)\)\]")


def strip_test_code(text: str) -> str:
    """Blanks `#[cfg(test)]` items and `mod tests` blocks."""
    while True:
        m = TEST_ATTR.search(text)
        if not m:
            break
        end = item_end(text, m.end())
        text = text[: m.start()] + re.sub(r"[^\n]", " ", text[m.start():end]) + text[end:]
    return text


@dataclass
class Module:
    """One module file of a crate."""

    path: tuple[str, ...]
    file: Path
    code: str = ""
    children: set[str] = field(default_factory=set)
    # name -> the path it re-exports (as written, resolved later)
    reexports: dict[str, tuple[str, ...]] = field(default_factory=dict)
    globs: list[tuple[str, ...]] = field(default_factory=list)
    uses: list[tuple[str, ...]] = field(default_factory=list)
    # names brought in by private `use`, to resolve bare paths through them
    imported: dict[str, tuple[str, ...]] = field(default_factory=dict)


def module_path(src: Path, file: Path) -> tuple[str, ...] | None:
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "bin":
        return None
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return tuple(parts)


def split_use_tree(tree: str) -> list[tuple[tuple[str, ...], str | None]]:
    """Expands a use tree into (path, alias) pairs; `*` ends a glob path."""
    tree = re.sub(r"\s*(::|,|\{|\})\s*", r"\1", re.sub(r"\s+", " ", tree.strip()))
    results: list[tuple[tuple[str, ...], str | None]] = []

    def walk(prefix: tuple[str, ...], s: str) -> None:
        s = s.strip(",")
        if not s:
            return
        # split top-level commas
        depth, start, parts = 0, 0, []
        for k, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:k])
                start = k + 1
        parts.append(s[start:])
        if len(parts) > 1:
            for p in parts:
                walk(prefix, p)
            return
        s = parts[0]
        brace = s.find("{")
        if brace >= 0 and s.endswith("}"):
            head = s[:brace].rstrip(":")
            segs = tuple(x for x in head.split("::") if x)
            walk(prefix + segs, s[brace + 1:-1])
            return
        alias = None
        if (m := re.match(r"(.*) as ([A-Za-z_][A-Za-z0-9_]*)$", s)) is not None:
            s, alias = m.group(1), m.group(2)
        segs = tuple(x for x in s.split("::") if x)
        results.append((prefix + segs, alias))

    walk((), tree)
    return results


USE_RE = re.compile(r"(?<![A-Za-z0-9_])(pub(\s*\([^)]*\))?\s+)?use\s+([^;]+);")
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:[A-Za-z_][A-Za-z0-9_]*)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")
MOD_RE = re.compile(r"(?<![A-Za-z0-9_])mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;")


class Crate:
    """A crate's modules and the arrows between them."""

    def __init__(self, name: str, src: Path):
        self.name = name
        self.modules: dict[tuple[str, ...], Module] = {}
        for file in sorted(src.rglob("*.rs")):
            path = module_path(src, file)
            if path is None or (path and path[-1] == "tests"):
                continue
            if path in self.modules:  # main.rs beside lib.rs: the binary's root
                continue
            text = strip_test_code(strip_comments_and_strings(file.read_text()))
            self.modules[path] = Module(path, file, text)
        for path, module in self.modules.items():
            for m in MOD_RE.finditer(module.code):
                if path + (m.group(1),) in self.modules:
                    module.children.add(m.group(1))
        for module in self.modules.values():
            self._read_uses(module)
        self.edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {p: set() for p in self.modules}
        for module in self.modules.values():
            for raw in module.uses:
                target = self.resolve(module.path, raw)
                if target is not None and target != module.path:
                    self.edges[module.path].add(target)

    def _read_uses(self, module: Module) -> None:
        code = module.code
        spans = []
        for m in USE_RE.finditer(code):
            spans.append((m.start(), m.end()))
            public = m.group(1) is not None
            for segs, alias in split_use_tree(m.group(3)):
                if not segs:
                    continue
                if segs[-1] == "*":
                    if public:
                        module.globs.append(segs[:-1])
                    else:
                        module.uses.append(segs[:-1])
                    continue
                if segs[-1] == "self":
                    segs = segs[:-1]
                name = alias or segs[-1]
                if public:
                    module.reexports[name] = segs
                else:
                    module.imported[name] = segs
                    module.uses.append(segs)
        # inline paths outside the use declarations
        rest = list(code)
        for a, b in spans:
            rest[a:b] = " " * (b - a)
        rest_text = "".join(rest)
        for m in PATH_RE.finditer(rest_text):
            segs = tuple(re.sub(r"\s+", "", m.group(1)).split("::"))
            first = segs[0]
            if first in KEYWORD_ROOTS or first in module.children or first in module.imported:
                module.uses.append(segs)

    def resolve(self, here: tuple[str, ...], segs: tuple[str, ...], depth: int = 0) -> tuple[str, ...] | None:
        """The module that defines what `segs`, written in module `here`, names."""
        if depth > 20 or not segs:
            return None
        first, rest = segs[0], segs[1:]
        if first == "crate":
            base: tuple[str, ...] = ()
        elif first == "self":
            base = here
        elif first == "super":
            base = here[:-1]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        elif first in self.modules.get(here, Module(here, Path())).children:
            base, rest = here + (first,), rest
        elif first in self.modules.get(here, Module(here, Path())).imported and depth == 0:
            return self.resolve(here, self.modules[here].imported[first] + rest, depth + 1)
        else:
            return None  # another crate, std, or a local name
        while rest and base + (rest[0],) in self.modules:
            base, rest = base + (rest[0],), rest[1:]
        if base not in self.modules:
            return None
        # through a facade's re-export to where the item is defined
        if rest:
            module = self.modules[base]
            if rest[0] in module.reexports:
                target = self.resolve(base, module.reexports[rest[0]] + rest[1:], depth + 1)
                return target if target is not None else base
            for glob in module.globs:
                target_mod = self.resolve(base, glob, depth + 1)
                if target_mod is not None and target_mod != base:
                    inner = self.resolve(target_mod, ("self",) + rest, depth + 1)
                    if inner is not None and inner != target_mod:
                        return inner
                    if self._defines(target_mod, rest[0]):
                        return target_mod
        return base

    def _defines(self, path: tuple[str, ...], name: str) -> bool:
        code = self.modules[path].code
        return re.search(
            r"(?<![A-Za-z0-9_])(fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+" + re.escape(name) + r"(?![A-Za-z0-9_])",
            code,
        ) is not None

    def circles(self) -> list[list[tuple[str, ...]]]:
        """The strongly connected components with more than one module (Tarjan)."""
        index: dict = {}
        low: dict = {}
        stack: list = []
        on: set = set()
        out: list = []
        counter = [0]
        sys.setrecursionlimit(10000)

        def visit(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in self.edges[v]:
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

        for v in sorted(self.edges):
            if v not in index:
                visit(v)
        return out


FN_RE = re.compile(r"(?<![A-Za-z0-9_])fn\s+([A-Za-z_][A-Za-z0-9_]*)")
MAX_FUNCTION_LINES = 80


def long_functions(folder: Path) -> list[str]:
    """The functions of `folder`'s non-test Rust files longer than the limit."""
    found = []
    for file in sorted(folder.rglob("*.rs")):
        rel = file.relative_to(folder)
        if "tests" in rel.parts or file.name == "tests.rs" or "target" in rel.parts:
            continue
        code = strip_test_code(strip_comments_and_strings(file.read_text()))
        for m in FN_RE.finditer(code):
            j = m.end()
            while j < len(code) and code[j] not in "{;":
                j += 1
            if j >= len(code) or code[j] == ";":
                continue  # a declaration without a body
            first = code.count("\n", 0, m.start()) + 1
            last = code.count("\n", 0, matching_brace(code, j)) + 1
            if last - first + 1 > MAX_FUNCTION_LINES:
                found.append(f"{file.relative_to(ROOT) if file.is_relative_to(ROOT) else rel}:{first}: fn {m.group(1)} is {last - first + 1} lines (at most {MAX_FUNCTION_LINES} outside tests)")
    return found


def name(path: tuple[str, ...]) -> str:
    return "::".join(path) or "(crate root)"


def layer_of(layers: list[list[str]], path: tuple[str, ...]) -> int | None:
    """The layer (0 = top) whose longest listed prefix matches `path`."""
    best, best_len = None, -1
    for k, prefixes in enumerate(layers):
        for prefix in prefixes:
            segs = tuple(prefix.split("::")) if prefix else ()
            if path[: len(segs)] == segs and len(segs) > best_len:
                best, best_len = k, len(segs)
    return best


def check(config: dict, only: str | None, dot: bool, edges: bool) -> int:
    failures = 0
    for crate_name, spec in config["crate"].items():
        if only and crate_name != only:
            continue
        crate = Crate(crate_name, ROOT / spec["src"])
        if dot or edges:
            if dot:
                print(f"digraph {crate_name.replace('-', '_')} {{")
            for v in sorted(crate.edges):
                for w in sorted(crate.edges[v]):
                    print(f'  "{name(v)}" -> "{name(w)}";' if dot else f"{name(v)} -> {name(w)}")
            if dot:
                print("}")
            continue
        problems: list[str] = []
        for comp in crate.circles():
            inner = [f"{name(v)} -> {name(w)}" for v in comp for w in sorted(crate.edges[v]) if w in comp]
            problems.append(f"import circle of {len(comp)} modules: {', '.join(name(c) for c in comp)}\n      arrows: " + "; ".join(inner))
        layers = spec.get("layers", [])
        for path in sorted(crate.modules):
            if path == ():
                continue
            mine = layer_of(layers, path)
            if mine is None:
                problems.append(f"module {name(path)} is in no layer of scripts/layers.toml")
                continue
            for target in sorted(crate.edges[path]):
                theirs = layer_of(layers, target)
                if theirs is not None and theirs < mine:
                    problems.append(f"upward arrow: {name(path)} (layer {mine + 1}) imports {name(target)} (layer {theirs + 1})")
        count = sum(len(e) for e in crate.edges.values())
        if problems:
            failures += len(problems)
            print(f"{crate_name}: {len(crate.modules)} modules, {count} arrows, {len(problems)} problems")
            for p in problems:
                print(f"  - {p}")
        else:
            print(f"{crate_name}: {len(crate.modules)} modules, {count} arrows, no circle, no upward arrow")
    if not only:
        folders = [spec["src"] for spec in config["crate"].values()] + config.get("functions", {}).get("folders", [])
        long = [line for folder in folders for line in long_functions(ROOT / folder)]
        for line in long:
            print(f"  - {line}")
        print(f"functions: {len(long)} over {MAX_FUNCTION_LINES} lines" if long else f"functions: none over {MAX_FUNCTION_LINES} lines")
        failures += len(long)
    return failures


SELF_TEST_FILES = {
    "lib.rs": "mod ground;\nmod top;\nmod middle;\n",
    "ground.rs": "use crate::top::Thing;\npub struct Base;\n",
    "top.rs": "use crate::middle::{helper as renamed};\npub struct Thing;\n#[cfg(test)]\nmod tests { use crate::ground::Base; }\n",
    "middle/mod.rs": "mod inner;\npub use inner::helper;\npub fn uses_base() -> crate::ground::Base { crate::ground::Base }\n",
    "middle/inner.rs": "pub fn helper() {\n    let _ = crate::ground::Base;\n" + "    let _ = 1;\n" * 80 + "}\n",
}


def self_test() -> int:
    """Writes a small crate that breaks each rule once, and checks that each is caught."""
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "src"
        for rel, text in SELF_TEST_FILES.items():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            (src / rel).write_text(text)
        crate = Crate("self-test", src)
        edges = {(name(v), name(w)) for v in crate.edges for w in crate.edges[v]}
        expected = {("ground", "top"), ("top", "middle::inner"), ("middle", "ground"), ("middle::inner", "ground")}
        circles = [[name(v) for v in c] for c in crate.circles()]
        layers = [["top"], ["middle"], ["ground"]]
        upward = [(name(v), name(w)) for v in crate.edges for w in crate.edges[v]
                  if (layer_of(layers, w) or 0) < (layer_of(layers, v) or 0)]
        long = long_functions(src)
    failures = []
    if edges != expected:
        failures.append(f"arrows {sorted(edges)}, expected {sorted(expected)} (a re-export followed, an alias read, test code left out)")
    if circles != [["ground", "middle::inner", "top"]]:
        failures.append(f"the circle ground -> top -> middle::inner -> ground was not found: {circles}")
    if ("ground", "top") not in upward:
        failures.append(f"the upward arrow ground -> top was not found: {upward}")
    if len(long) != 1 or "fn helper is 83 lines" not in long[0]:
        failures.append(f"the 83-line function was not found: {long}")
    for failure in failures:
        print(f"self-test: {failure}")
    print("self-test: every rule catches what it is for" if not failures else "self-test failed")
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    if argv == ["--self-test"]:
        return self_test()
    config = tomllib.loads((ROOT / "scripts" / "layers.toml").read_text())
    only, dot, edges = None, False, False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("--dot", "--edges") and args:
            only, dot, edges = args.pop(0), a == "--dot", a == "--edges"
        else:
            print(__doc__)
            return 2
    failures = check(config, only, dot, edges)
    if failures:
        print(f"{failures} problems in the import graph: see the book's architecture chapter for the layers")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
