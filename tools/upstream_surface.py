"""Build tests/trinity/upstream_surface.json's per-release rows from upstream sources.

The surface test holds reinforge's mirror to the modules and names Trinity-RFT and rLLM
users import. Users wrote their code against whatever release they had, so each row
records which releases had it. This script reads every release given, keeps the
modules under the user-facing prefixes (workflows, rewards, operators, selectors and
the task scheduler, Task/Experience, rLLM's agents/environments/workflows/rewards),
takes each module's public names (its ``__all__``, else its top-level classes and
functions), and merges them into the JSON: existing rows keep their names and source,
and every module and name gains ``releases``, the releases that had it.

Sources, each ``LABEL=PATH`` (a folder holding the ``trinity``/``rllm`` package, e.g. an
unpacked wheel) or ``LABEL=GITDIR@REF`` (a git directory and a tag or commit, read with
``git archive``; a fetched mirror works)::

    pip download --no-deps trinity-rft==0.1.0 -d wheels && unzip wheels/*.whl -d t-0.1.0
    python tools/upstream_surface.py --package trinity \\
        --release trinity-0.1.0=t-0.1.0 ... --write tests/trinity/upstream_surface.json
    python tools/upstream_surface.py --package rllm \\
        --release rllm-v0.2.0=/path/to/rllm.git@v0.2.0 ... --write ...
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import subprocess
import tarfile
from pathlib import Path

#: the modules user code imports (and what reinforge mirrors), by package
PREFIXES = {
    "trinity": (
        "trinity.common.workflows",
        "trinity.common.rewards",
        "trinity.common.experience",
        "trinity.buffer.operators",
        "trinity.buffer.selector",
        "trinity.buffer.task_scheduler",
        "trinity.utils.eval_utils",
        "trinity.utils.math_eval_utils",
    ),
    "rllm": (
        "rllm.agents",
        "rllm.environments",
        "rllm.workflows",
        "rllm.rewards",
    ),
}


#: modules of settings, whose public names are UPPER_CASE constants as well
CONSTANT_MODULES = ("rllm.globals",)


def _public_names(source: str, constants: bool = False) -> list[str] | None:
    """``__all__`` when it is a literal list, else top-level public classes/functions
    (and UPPER_CASE assignments, with ``constants``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                return sorted({str(n) for n in ast.literal_eval(node.value)})
            except ValueError:
                break  # computed: fall back to definitions
    names = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
    }
    if constants:
        names |= {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name) and target.id.isupper()
        }
    return sorted(names)


def _files_from_folder(root: Path, package: str) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text("utf-8", errors="replace")
        for p in (root / package).rglob("*.py")
    }


def _files_from_git(gitdir: str, ref: str, package: str) -> dict[str, str]:
    blob = subprocess.run(
        ["git", "--git-dir", gitdir, "archive", "--format=tar", ref, package],
        check=True,
        capture_output=True,
    ).stdout
    files = {}
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".py"):
                handle = tar.extractfile(member)
                if handle is not None:
                    files[member.name] = handle.read().decode("utf-8", errors="replace")
    return files


def scan_release(spec: str, package: str) -> tuple[str, dict[str, list[str]]]:
    """(label, module -> public names) of one release ``LABEL=PATH`` or ``LABEL=GIT@REF``."""
    label, _, where = spec.partition("=")
    if "@" in where:
        gitdir, _, ref = where.rpartition("@")
        files = _files_from_git(gitdir, ref, package)
    else:
        files = _files_from_folder(Path(where), package)
    modules: dict[str, list[str]] = {}
    for path, text in files.items():
        parts = Path(path).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join(parts)
        wanted = PREFIXES[package] + CONSTANT_MODULES
        if not module.startswith(wanted) or any(p.startswith("_") for p in parts):
            continue
        names = _public_names(text, constants=module in CONSTANT_MODULES)
        if names is not None:
            modules[module] = names
    return label, modules


def merge(surface: dict, releases: list[tuple[str, dict[str, list[str]]]], source: str) -> dict:
    """Add each release's modules and names to ``surface``, marking who had what."""
    rows = surface["modules"]
    for label, modules in releases:
        for module, names in modules.items():
            row = rows.setdefault(module, {"names": [], "source": source})
            if label not in row.setdefault("module_releases", []):
                row["module_releases"].append(label)
            marks = row.setdefault("releases", {})
            for name in names:
                if name not in row["names"]:
                    row["names"].append(name)
                if label not in marks.setdefault(name, []):
                    marks[name].append(label)
    for row in rows.values():
        row["names"] = sorted(row["names"])
    surface["modules"] = dict(sorted(rows.items()))
    return surface


def dump(surface: dict) -> str:
    """The JSON with every list of strings on one line (a row per name stays readable)."""
    text = json.dumps(surface, indent=1, ensure_ascii=False)
    flat = re.sub(
        r"\[\s*((?:\"(?:[^\"\\]|\\.)*\",?\s*)+)\]",
        lambda m: "[" + ", ".join(re.findall(r'"(?:[^"\\]|\\.)*"', m[1])) + "]",
        text,
    )
    return flat + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", choices=sorted(PREFIXES), required=True)
    parser.add_argument("--release", action="append", required=True, help="LABEL=PATH|GIT@REF")
    parser.add_argument("--source", required=True, help="the key in 'sources' the rows cite")
    parser.add_argument("--source-note", default="", help="where the releases came from")
    parser.add_argument("--write", type=Path, required=True, help="the surface JSON to update")
    args = parser.parse_args(argv)
    surface = json.loads(args.write.read_text("utf-8"))
    releases = [scan_release(spec, args.package) for spec in args.release]
    surface["sources"][args.source] = {
        "note": args.source_note,
        "releases": [label for label, _ in releases],
    }
    merge(surface, releases, args.source)
    args.write.write_text(dump(surface), "utf-8")
    total = sum(len(m) for _, m in releases)
    print(f"{len(releases)} release(s), {total} module version(s); {len(surface['modules'])} rows")


if __name__ == "__main__":
    main()
