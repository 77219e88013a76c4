#!/usr/bin/env python3
"""Prints a crate's public API, one line per item, sorted, from rustdoc's JSON.

    scripts/public_api.py kite-ssh            # builds the JSON, prints the API
    scripts/public_api.py kite-ssh --json F   # reads F instead of building it
    scripts/public_api.py --self-test

The JSON comes from

    RUSTC_BOOTSTRAP=1 cargo rustdoc --locked -p <crate> --all-features --lib \\
        -- -Z unstable-options --output-format json

(target/doc/<crate_name>.json). Every item reachable from the crate root
through public modules and re-exports is listed under the path a user
names it by: modules, types (with `#[non_exhaustive]`), public fields,
variants, functions and methods with their signature, trait items (marked
`provided` when they have a default), constants, and the traits each type
implements (auto traits and blanket impls left out). CI compares the
output with the crate's PUBLIC-API.txt, so a change of the API is a
visible change of that file.
"""

import json
import os
import subprocess
import sys


# Paths of the standard library as a reader knows them (rustdoc gives where
# they are defined: alloc::string::String, core::option::Option, ...).
PRELUDE = {
    "alloc::string::String": "String",
    "alloc::vec::Vec": "Vec",
    "alloc::boxed::Box": "Box",
    "core::option::Option": "Option",
    "core::result::Result": "Result",
    "alloc::sync::Arc": "std::sync::Arc",
    "core::time::Duration": "std::time::Duration",
    "core::future::future::Future": "std::future::Future",
    "core::marker::Send": "Send",
    "core::marker::Sync": "Sync",
    "core::marker::Unpin": "Unpin",
    "core::marker::Sized": "Sized",
    "core::marker::Copy": "Copy",
    "core::clone::Clone": "Clone",
    "core::default::Default": "Default",
    "core::fmt::Debug": "std::fmt::Debug",
    "core::fmt::Display": "std::fmt::Display",
    "core::cmp::PartialEq": "PartialEq",
    "core::cmp::Eq": "Eq",
    "core::hash::Hash": "std::hash::Hash",
    "core::convert::From": "From",
    "core::convert::Into": "Into",
    "core::iter::traits::collect::IntoIterator": "IntoIterator",
    "core::ops::function::Fn": "Fn",
    "core::ops::drop::Drop": "Drop",
    "core::error::Error": "std::error::Error",
    "core::net::socket_addr::SocketAddr": "std::net::SocketAddr",
    "core::net::ip_addr::IpAddr": "std::net::IpAddr",
    "core::pin::Pin": "std::pin::Pin",
}

# Trait impls that say nothing to a user of the crate.
UNLISTED_TRAITS = {"core::marker::StructuralPartialEq"}


def load(crate, json_path=None):
    if json_path is None:
        env = dict(os.environ, RUSTC_BOOTSTRAP="1")
        command = ["cargo", "rustdoc", "--locked", "--quiet", "-p", crate, "--all-features", "--lib", "--",
                   "-Z", "unstable-options", "--output-format", "json"]
        subprocess.run(command, check=True, env=env)
        target = os.environ.get("CARGO_TARGET_DIR", "target")
        json_path = os.path.join(target, "doc", crate.replace("-", "_") + ".json")
    with open(json_path, encoding="utf-8") as f:
        return json.load(f)


def kind_of(item):
    inner = item.get("inner")
    if isinstance(inner, dict) and inner:
        return next(iter(inner))
    return str(inner)


def body(item):
    return item["inner"][kind_of(item)]


class Api:
    def __init__(self, doc):
        self.doc = doc
        self.index = doc["index"]
        self.paths = doc.get("paths", {})
        self.public = {}  # item id -> the public path it is reached by (the shortest)
        self.aliases = {}  # item id -> the other public paths it is reached by
        self.lines = set()

    # ---- types and signatures -------------------------------------------------

    def path_name(self, path):
        """A resolved path: the public path of a local item, else rustdoc's full path."""
        target = path.get("id")
        name = path.get("path") or path.get("name") or "?"
        if target is not None:
            key = str(target)
            if key in self.public:
                name = self.public[key]
            elif key in self.paths and self.paths[key].get("crate_id", 0) != 0:
                name = "::".join(self.paths[key]["path"])
                name = PRELUDE.get(name, name)
        return name + self.args(path.get("args"))

    def args(self, args):
        if not args:
            return ""
        if "angle_bracketed" in args:
            angle = args["angle_bracketed"]
            parts = [self.arg(a) for a in angle.get("args", [])]
            for c in angle.get("constraints", angle.get("bindings", [])):
                binding = c.get("binding", {})
                if "equality" in binding:
                    term = binding["equality"]
                    value = self.type(term["type"]) if "type" in term else str(term.get("constant", "?"))
                    parts.append(f"{c['name']} = {value}")
                else:
                    parts.append(f"{c['name']}: {self.bounds(binding.get('constraint', []))}")
            return f"<{', '.join(parts)}>" if parts else ""
        if "parenthesized" in args:
            p = args["parenthesized"]
            out = f" -> {self.type(p['output'])}" if p.get("output") else ""
            return f"({', '.join(self.type(t) for t in p['inputs'])}){out}"
        return ""

    def arg(self, a):
        if a == "infer":
            return "_"
        if "lifetime" in a:
            return a["lifetime"]
        if "type" in a:
            return self.type(a["type"])
        if "const" in a:
            return str(a["const"].get("expr", "?"))
        return "?"

    def bounds(self, bounds):
        out = []
        for b in bounds:
            if "trait_bound" in b:
                t = b["trait_bound"]
                modifier = "?" if t.get("modifier") == "maybe" else ""
                out.append(modifier + self.path_name(t["trait"]))
            elif "outlives" in b:
                out.append(b["outlives"])
            elif "use" in b:
                out.append(f"use<{', '.join(str(u) for u in b['use'])}>")
        return " + ".join(out)

    def type(self, t):
        if t is None:
            return "()"
        if isinstance(t, str):
            return "_" if t == "infer" else t
        (k, v), = t.items()
        if k == "resolved_path":
            return self.path_name(v)
        if k == "dyn_trait":
            traits = [self.path_name(p["trait"]) for p in v["traits"]]
            if v.get("lifetime"):
                traits.append(v["lifetime"])
            return "dyn " + " + ".join(traits)
        if k in ("generic", "primitive"):
            return v
        if k == "tuple":
            return f"({', '.join(self.type(x) for x in v)}{',' if len(v) == 1 else ''})"
        if k == "slice":
            return f"[{self.type(v)}]"
        if k == "array":
            return f"[{self.type(v['type'])}; {v['len']}]"
        if k == "impl_trait":
            return "impl " + self.bounds(v)
        if k == "borrowed_ref":
            lifetime = v["lifetime"] + " " if v.get("lifetime") else ""
            return f"&{lifetime}{'mut ' if v['is_mutable'] else ''}{self.type(v['type'])}"
        if k == "raw_pointer":
            return f"*{'mut' if v['is_mutable'] else 'const'} {self.type(v['type'])}"
        if k == "qualified_path":
            trait = f" as {self.path_name(v['trait'])}" if v.get("trait") else ""
            return f"<{self.type(v['self_type'])}{trait}>::{v['name']}"
        if k == "function_pointer":
            sig = v.get("sig", v.get("decl", {}))
            inputs = ", ".join(self.type(x[1]) for x in sig["inputs"])
            out = f" -> {self.type(sig['output'])}" if sig.get("output") else ""
            return f"fn({inputs}){out}"
        return k

    def generics(self, g):
        params = []
        for p in (g or {}).get("params", []):
            kind = p["kind"]
            if "type" in kind:
                if kind["type"].get("is_synthetic"):
                    continue
                b = self.bounds(kind["type"].get("bounds", []))
                params.append(p["name"] + (f": {b}" if b else ""))
            elif "const" in kind:
                params.append(f"const {p['name']}: {self.type(kind['const']['type'])}")
            else:
                params.append(p["name"])
        return f"<{', '.join(params)}>" if params else ""

    def where(self, g):
        preds = []
        for w in (g or {}).get("where_predicates", []):
            if "bound_predicate" in w:
                b = w["bound_predicate"]
                preds.append(f"{self.type(b['type'])}: {self.bounds(b['bounds'])}")
        return f" where {', '.join(preds)}" if preds else ""

    def signature(self, f):
        header = f.get("header", {})
        prefix = "".join(word + " " for word, on in (("const", header.get("is_const")),
                                                       ("async", header.get("is_async")),
                                                       ("unsafe", header.get("is_unsafe"))) if on)
        inputs = []
        for arg_name, t in f["sig"]["inputs"]:
            if arg_name == "self":
                if t == {"generic": "Self"}:
                    inputs.append("self")
                    continue
                if "borrowed_ref" in t and t["borrowed_ref"]["type"] == {"generic": "Self"}:
                    inputs.append("&mut self" if t["borrowed_ref"]["is_mutable"] else "&self")
                    continue
            inputs.append(f"{arg_name}: {self.type(t)}")
        output = f" -> {self.type(f['sig']['output'])}" if f["sig"].get("output") else ""
        generics = f.get("generics")
        return f"{prefix}fn{self.generics(generics)}({', '.join(inputs)}){output}{self.where(generics)}"

    # ---- walking ---------------------------------------------------------------

    def reach(self, module_id, prefix, seen):
        """Records the public path of every item reachable from the module."""
        if module_id in seen:
            return
        seen.add(module_id)
        for child in body(self.index[module_id]).get("items", []):
            child = str(child)
            item = self.index.get(child)
            if item is None:
                continue
            k = kind_of(item)
            if k == "use":
                use = item["inner"]["use"]
                target = use.get("id")
                if target is None or str(target) not in self.index:
                    # A re-export of another crate's item (`pub use russh;`): its path, and where it leads.
                    if item.get("visibility") == "public" and not use.get("is_glob"):
                        self.lines.add(f"{prefix}::{use['name']} use = {use['source']}")
                    continue
                target = str(target)
                if use.get("is_glob"):
                    self.reach(target, prefix, seen)
                    continue
                self.name(target, f"{prefix}::{use['name']}", seen)
            elif item.get("name") and item.get("visibility") == "public":
                self.name(child, f"{prefix}::{item['name']}", seen)

    def name(self, item_id, path, seen):
        known = self.public.get(item_id)
        paths = {path} | ({known} if known else set()) | self.aliases.get(item_id, set())
        best = min(paths, key=lambda p: (p.count("::"), len(p), p))
        self.public[item_id] = best
        self.aliases[item_id] = paths - {best}
        if kind_of(self.index[item_id]) == "module":
            self.reach(item_id, path, seen)

    def emit_fn(self, path, f, suffix=""):
        """A function's line: its path and its signature, which says it is one."""
        self.lines.add(f"{path} {self.signature(f)}{suffix}")

    def emit(self, path, kind, detail=""):
        self.lines.add(f"{path} {kind}{(' ' + detail) if detail else ''}")

    def describe(self):
        for item_id, path in self.public.items():
            item = self.index[item_id]
            k = kind_of(item)
            v = body(item)
            attrs = " ".join(self.markers(item))
            for alias in self.aliases.get(item_id, ()):
                self.emit(alias, "use", f"= {path}")
            if k == "module":
                self.emit(path, "mod")
            elif k in ("struct", "enum", "union"):
                self.emit(path, k, (self.generics(v.get("generics")) + " " + attrs).strip())
                self.members(path, k, v)
                self.impls(path, v.get("impls", []))
            elif k == "trait":
                self.emit(path, "trait", (self.generics(v.get("generics")) + " " + attrs).strip())
                for member in v.get("items", []):
                    self.trait_item(path, self.index[str(member)])
                self.impls(path, v.get("implementations", []), foreign_only=True)
            elif k == "function":
                self.emit_fn(path, v)
            elif k in ("constant", "static"):
                self.emit(path, "const" if k == "constant" else "static", self.type(v["type"]))
            elif k == "type_alias":
                self.emit(path, "type", f"= {self.type(v['type'])}")
            elif k in ("macro", "proc_macro"):
                self.emit(path, "macro")
            else:
                self.emit(path, k)

    def markers(self, item):
        out = []
        for a in item.get("attrs", []):
            text = a if isinstance(a, str) else json.dumps(a)
            if "non_exhaustive" in text:
                out.append("#[non_exhaustive]")
        return out

    def members(self, path, k, v):
        if k in ("struct", "union"):
            kind = v.get("kind", {})
            fields = v.get("fields", [])
            if isinstance(kind, dict) and "plain" in kind:
                fields = kind["plain"]["fields"]
            elif isinstance(kind, dict) and "tuple" in kind:
                fields = [f for f in kind["tuple"] if f is not None]
            for field in fields:
                f = self.index[str(field)]
                self.emit(f"{path}::{f['name']}", "field", self.type(body(f)))
        else:
            for variant in v.get("variants", []):
                var = self.index[str(variant)]
                self.emit(f"{path}::{var['name']}", "variant", self.variant(body(var)) + " " + " ".join(self.markers(var)))

    def variant(self, v):
        kind = v.get("kind", "plain")
        if kind == "plain":
            return ""
        if "tuple" in kind:
            return "(" + ", ".join(self.type(body(self.index[str(f)])) if f is not None else "_"
                                   for f in kind["tuple"]) + ")"
        fields = kind["struct"]["fields"]
        return "{ " + ", ".join(f"{self.index[str(f)]['name']}: {self.type(body(self.index[str(f)]))}"
                                for f in fields) + " }"

    def impls(self, path, impl_ids, foreign_only=False):
        """A type's impls; for a trait (`foreign_only`), its impls for types listed nowhere else."""
        for impl_id in impl_ids:
            impl_item = self.index.get(str(impl_id))
            if impl_item is None:
                continue
            imp = body(impl_item)
            if imp.get("is_synthetic") or imp.get("blanket_impl") is not None:
                continue
            if foreign_only and str(imp["for"].get("resolved_path", {}).get("id")) in self.public:
                continue
            trait = imp.get("trait")
            if trait and str(trait.get("id")) in self.paths and \
                    "::".join(self.paths[str(trait["id"])]["path"]) in UNLISTED_TRAITS:
                continue
            if imp.get("trait") is None:
                for member in imp.get("items", []):
                    m = self.index[str(member)]
                    if m.get("visibility") != "public":
                        continue
                    self.impl_item(path, m)
            else:
                negative = "!" if imp.get("is_negative") else ""
                self.emit(path, "impl", f"{self.generics(imp.get('generics'))} {negative}{self.path_name(imp['trait'])}"
                          f" for {self.type(imp['for'])}{self.where(imp.get('generics'))}".replace("  ", " ").strip())

    def impl_item(self, path, m):
        k = kind_of(m)
        if k == "function":
            self.emit_fn(f"{path}::{m['name']}", body(m))
        elif k == "assoc_const":
            self.emit(f"{path}::{m['name']}", "const", self.type(body(m)["type"]))
        elif k == "assoc_type":
            self.emit(f"{path}::{m['name']}", "type")

    def trait_item(self, path, m):
        k = kind_of(m)
        v = body(m)
        if k == "function":
            provided = " (provided)" if v.get("has_body") else ""
            self.emit_fn(f"{path}::{m['name']}", v, provided)
        elif k == "assoc_type":
            self.emit(f"{path}::{m['name']}", "type", self.bounds(v.get("bounds", [])))
        elif k == "assoc_const":
            self.emit(f"{path}::{m['name']}", "const", self.type(v["type"]))


def public_api(doc):
    api = Api(doc)
    root = str(doc["root"])
    crate_name = api.index[root]["name"]
    api.public[root] = crate_name
    api.reach(root, crate_name, set())
    api.describe()
    return sorted(line.rstrip() for line in api.lines)


def self_test():
    """A tiny crate in rustdoc's JSON shape: a re-export, a struct with a field, a method."""
    def item(name, inner, visibility="public", attrs=()):
        return {"name": name, "visibility": visibility, "attrs": list(attrs), "inner": inner}
    duration = {"resolved_path": {"path": "Duration", "id": 9, "args": None}}
    doc = {
        "root": 0,
        "paths": {"9": {"crate_id": 1, "path": ["core", "time", "Duration"], "kind": "struct"}},
        "index": {
            "0": item("demo", {"module": {"is_crate": True, "items": [1, 2]}}),
            "1": item(None, {"use": {"source": "inner::Options", "name": "Options", "id": 3, "is_glob": False}}),
            "2": item("inner", {"module": {"is_crate": False, "items": [3]}}),
            "3": item("Options", {"struct": {"kind": {"plain": {"fields": [4], "has_stripped_fields": False}},
                                             "generics": {"params": [], "where_predicates": []}, "impls": [5]}},
                      attrs=["#[non_exhaustive]"]),
            "4": item("timeout", {"struct_field": duration}),
            "5": item(None, {"impl": {"trait": None, "for": {"resolved_path": {"path": "Options", "id": 3}},
                                      "items": [6], "generics": {"params": [], "where_predicates": []},
                                      "is_synthetic": False, "blanket_impl": None}}),
            "6": item("with_timeout", {"function": {
                "sig": {"inputs": [["self", {"generic": "Self"}], ["value", duration]],
                        "output": {"generic": "Self"}},
                "generics": {"params": [], "where_predicates": []},
                "header": {"is_const": False, "is_async": False, "is_unsafe": False}}}),
        },
    }
    got = public_api(doc)
    want = [
        "demo mod",
        "demo::Options struct #[non_exhaustive]",
        "demo::Options::timeout field std::time::Duration",
        "demo::Options::with_timeout fn(self, value: std::time::Duration) -> Self",
        "demo::inner mod",
        "demo::inner::Options use = demo::Options",
    ]
    if got != want:
        print("self-test failed:\n  got  " + "\n       ".join(got) + "\n  want " + "\n       ".join(want))
        return 1
    print("public_api.py self-test passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--json"):
        print(__doc__, file=sys.stderr)
        return 2
    doc = load(argv[1], argv[3] if len(argv) == 4 else None)
    sys.stdout.write("".join(line + "\n" for line in public_api(doc)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
