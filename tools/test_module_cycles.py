#!/usr/bin/env python3
"""Tests of tools/module_cycles.py on small crates written to a temporary directory.

    python3 tools/test_module_cycles.py
"""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import module_cycles  # noqa: E402


ROOTS = []


def tearDownModule():
    for root in ROOTS:
        shutil.rmtree(root, ignore_errors=True)


def crate(files):
    """A src dir with `files` ({relative path: text}); its lib.rs module graph."""
    root = tempfile.mkdtemp(prefix="module-cycles-")
    ROOTS.append(root)
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    return module_cycles.Crate(os.path.join(root, "lib.rs"))


def cycles(files):
    return [[module_cycles.name(m) for m in c] for c in crate(files).cycles()]


class ModuleCycles(unittest.TestCase):
    def test_two_modules_that_import_each_other_are_a_cycle(self):
        got = cycles({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B;\nfn f() -> crate::a::A { crate::a::A }\n",
        })
        self.assertEqual(got, [["crate::a", "crate::b"]])

    def test_a_re_export_is_followed_to_where_the_name_is_defined(self):
        # lib.rs re-exports error::Error and uses a; a uses crate::Error: no cycle, since
        # Error lives in `error`, which imports nothing.
        files = {
            "lib.rs": "mod a;\nmod error;\npub use error::Error;\npub fn f() { a::g() }\n",
            "a.rs": "use crate::Error;\npub fn g() {}\n",
            "error.rs": "pub struct Error;\n",
        }
        self.assertEqual(cycles(files), [])
        # A name the root defines itself is the root's: that closes the loop.
        files["lib.rs"] = "mod a;\npub struct Error;\npub fn f() { a::g() }\n"
        files["a.rs"] = "use crate::Error;\npub fn g() {}\n"
        self.assertEqual(cycles(files), [["crate", "crate::a"]])

    def test_a_table_of_contents_mod_rs_is_no_hub(self):
        got = cycles({
            "lib.rs": "pub mod engine;\n",
            "engine/mod.rs": "mod facade;\nmod run;\npub use facade::Engine;\npub use run::Goal;\n",
            "engine/facade.rs": "pub struct Engine;\n",
            "engine/run.rs": "use super::facade::Engine;\npub struct Goal;\nimpl Engine { fn r(&self) {} }\n",
        })
        self.assertEqual(got, [])

    def test_a_child_that_uses_what_its_parent_defines_closes_a_loop(self):
        got = cycles({
            "lib.rs": "pub mod engine;\n",
            "engine/mod.rs": "mod run;\npub struct Engine { g: run::Goal }\n",
            "engine/run.rs": "use super::Engine;\npub struct Goal;\n",
        })
        self.assertEqual(got, [["crate::engine", "crate::engine::run"]])

    def test_inline_test_modules_belong_to_their_file_and_comments_and_strings_are_skipped(self):
        got = cycles({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": (
                "// use crate::b::X;\n/* crate::b::X */\n"
                "const S: &str = \"crate::b::X\";\nconst C: char = '\"';\n"
                "pub fn f<'a>(x: &'a str) -> &'a str { x }\n"
                "#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"
            ),
            "b.rs": "use crate::a::f;\n",
        })
        self.assertEqual(got, [])

    def test_a_grouped_use_names_its_leaves_not_the_module_before_the_braces(self):
        # `use crate::views::{Names, delta}` in a child of `views` names `names` and `delta`
        # (through views/mod.rs's re-exports), not `views` itself.
        got = cycles({
            "lib.rs": "pub mod views;\n",
            "views/mod.rs": (
                "mod delta;\nmod names;\nmod stairs;\n"
                "pub use delta::delta;\npub use names::Names;\npub use stairs::Stairs;\n"
            ),
            "views/delta.rs": "pub fn delta() {}\n",
            "views/names.rs": "pub struct Names;\n",
            "views/stairs.rs": "use crate::views::{Names, delta};\npub struct Stairs;\n",
        })
        self.assertEqual(got, [])

    def test_use_trees_give_every_leaf_and_what_it_binds(self):
        got = module_cycles.use_paths("a::{b, c::d as e, self, x::*}")
        self.assertEqual(
            got,
            [(["a", "b"], "b"), (["a", "c", "d"], "e"), (["a"], "a"), (["a", "x"], None)],
        )

    def test_the_exit_status_says_whether_there_is_a_cycle(self):
        c = crate({"lib.rs": "mod a;\n", "a.rs": "pub fn f() {}\n"})
        src = os.path.dirname(c.root_file)
        self.assertEqual(module_cycles.main(["module_cycles.py", src]), 0)
        with open(os.path.join(src, "a.rs"), "w", encoding="utf-8") as f:
            f.write("pub fn f() { crate::g() }\n")
        with open(os.path.join(src, "lib.rs"), "w", encoding="utf-8") as f:
            f.write("mod a;\npub fn g() { a::f() }\n")
        self.assertEqual(module_cycles.main(["module_cycles.py", src]), 1)
        self.assertEqual(module_cycles.main(["module_cycles.py", "/nonexistent"]), 2)


if __name__ == "__main__":
    unittest.main()
