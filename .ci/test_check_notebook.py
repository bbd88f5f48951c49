"""Tests of check_notebook.py's path rule, and the committed notebooks checked by it.

    python3 .ci/test_check_notebook.py        (test.sh runs it)
"""
import glob
import os
import sys
import unittest

import nbformat

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_notebook import machine_paths, problems  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class PathRule(unittest.TestCase):
    def test_flags_folders_of_one_machine(self):
        for text, want in [
            ("PTX cache: /root/.cache/cudalessons/ptx", ["/root/.cache/cudalessons/ptx"]),
            ("<td>/home/ada/cudalessons/go.work</td>", ["/home/ada/cudalessons/go.work"]),
            ('go: replacing with "/work/main/notebooks/.."', ["/work/main/notebooks/.."]),
            ("built in /tmp/gonb_1234/main.go", ["/tmp/gonb_1234/main.go"]),
            ("(/mnt/data/x.json)", ["/mnt/data/x.json"]),
        ]:
            self.assertEqual(machine_paths(text), want, text)

    def test_leaves_system_installs_and_other_slashes(self):
        for text in [
            "<td>/usr/local/cuda/include</td>",
            "NVRTC 13.0, loaded from /usr/local/cuda-13.0/lib64/libnvrtc.so.13",
            "PTX cache: ~/.cache/cudalessons/ptx",
            '<svg xmlns="http://www.w3.org/2000/svg"></svg>',
            "2958 GB/s, 66.9 TFLOP/s, fwd / bwd, float4/half2",
            "// a comment in a kernel: x = a/b; </td>",
            "data:image/png;base64,iVBOR+/w0KGgo/AAAA/bb==",
        ]:
            self.assertEqual(machine_paths(text), [], text)

    def test_problems_reports_the_cell(self):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("stream", name="stdout", text="at /home/ada/x/y\n")])]
        found = problems(nb)
        self.assertEqual(len(found), 1)
        self.assertIn("/home/ada/x/y", found[0][1])

    def test_an_expected_error_is_allowed_but_not_a_path(self):
        err = nbformat.v4.new_output("error", ename="exit status 3", evalue="", traceback=[])
        cell = nbformat.v4.new_code_cell("x", outputs=[err])
        nb = nbformat.v4.new_notebook()
        nb.cells = [cell]
        self.assertEqual(len(problems(nb)), 1)
        cell.metadata["tags"] = ["raises-exception"]
        self.assertEqual(problems(nb), [])
        cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text="at /home/ada/x/y\n"))
        self.assertEqual(len(problems(nb)), 1)


class CommittedNotebooks(unittest.TestCase):
    """The committed notebooks (outputs of their GPU run) name no folder of that machine."""

    def test_no_machine_paths(self):
        paths = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
        self.assertTrue(paths)
        for path in paths:
            found = [m for _, m in problems(nbformat.read(path, as_version=4)) if "names a folder" in m]
            self.assertEqual(found, [], os.path.relpath(path, ROOT))


if __name__ == "__main__":
    unittest.main()
