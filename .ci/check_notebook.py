"""Fails when an executed notebook has an error: an error output, or an error shown by
helpers/show (HTML with the class kernels-error), or stderr that reports a Go build failure; or when
an output names a folder of the machine it ran on (see machine_paths).

    python3 .ci/check_notebook.py executed.ipynb [...]
"""
import json
import re
import sys

# An absolute path starts at a slash that begins the text or follows a space, a quote, '(', '[',
# '=', ',' or '>' (a value in an HTML cell), and has at least two parts. So URLs (http://...), closing
# tags (</td>), comments (//), units (GB/s) and base64 images are not paths.
PATH = re.compile(r"""(?<![^\s"'(\[=,>])(/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._@+-]+)+)""")

# Paths under these roots are where the system installs things (the CUDA toolkit in /usr/local or
# /opt, Debian's CUDA in /usr/include and /usr/lib): the same on every machine with that install, and
# the doctor must show which CUDA headers and NVRTC a run used. Everything else (home folders, /root,
# /work, /tmp, /mnt, a project checkout anywhere) belongs to one machine or one user, so committed
# outputs must not name it; the doctor writes the PTX cache as ~/.cache/... for that reason.
SYSTEM_ROOTS = {"usr", "opt", "etc", "lib", "lib64", "bin", "sbin", "proc", "sys", "dev"}


def machine_paths(text):
    """The absolute paths in text that name a folder of one machine (not a system install)."""
    return [p for p in PATH.findall(text) if p.split("/")[1] not in SYSTEM_ROOTS]


def output_texts(out):
    """The text an output shows (images left out)."""
    if out.get("output_type") == "stream":
        yield out.get("text", "")
    for kind, value in out.get("data", {}).items():
        if kind.startswith("text/") or kind.endswith("json"):
            yield value if isinstance(value, str) else str(value)


# Jupyter's standard tag for a cell whose error is the point (nbclient runs on past it): such a cell
# may show an error; its outputs must still name no folder of the machine.
EXPECTED_ERROR_TAG = "raises-exception"


def problems(nb):
    """(cell index, message) for every error and machine path in the notebook's outputs."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        expected = EXPECTED_ERROR_TAG in cell.get("metadata", {}).get("tags", [])
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
            if text and not expected:
                found.append((i, f"shows an error:\n{text[:2000]}"))
            paths = sorted({p for t in output_texts(out) for p in machine_paths(t)})
            if paths:
                found.append((i, f"names a folder of this machine: {', '.join(paths)}"))
    return found


def joined(v):
    """A notebook's multi-line string, which the file may store as a list of lines."""
    return "".join(v) if isinstance(v, list) else v


def read(path):
    """The notebook at path as a dict, its outputs' texts joined (as nbformat.read gives them; the
    GPU machine has no nbformat)."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = joined(out["text"])
            for kind, value in out.get("data", {}).items():
                out["data"][kind] = joined(value)
    return nb


def main(paths):
    bad = 0
    for path in paths:
        found = problems(read(path))
        for i, msg in found:
            print(f"{path}: cell {i} {msg}\n", file=sys.stderr)
        bad += len(found)
        print(f"{path}: {'FAIL' if found else 'ok'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
