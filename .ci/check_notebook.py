"""Fails when an executed notebook has an error: an error output, or an error shown by
helpers/show (HTML with the class kernels-error), or stderr that reports a Go build failure.

    python3 .ci/check_notebook.py executed.ipynb [...]
"""
import sys

import nbformat

bad = 0
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            text = ""
            if kind == "error":
                text = f"{out.get('ename')}: {out.get('evalue')}"
            elif kind in ("display_data", "execute_result"):
                html = out.get("data", {}).get("text/html", "")
                if "kernels-error" in html:
                    text = html
            elif kind == "stream" and out.get("name") == "stderr":
                if "panic:" in out.get("text", "") or "[build failed]" in out.get("text", ""):
                    text = out.get("text", "")
            if text:
                bad += 1
                print(f"{path}: cell {i} shows an error:\n{text[:2000]}\n", file=sys.stderr)
    print(f"{path}: {'FAIL' if bad else 'ok'}")
sys.exit(1 if bad else 0)
