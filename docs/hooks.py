"""MkDocs hook: the reference pages are generated from the code at build time
(sweep.dev.reference), so the site's reference cannot drift from the schema and the CLI, and
the repository holds no generated file."""

from __future__ import annotations

from mkdocs.structure.files import File, Files


def on_files(files: Files, config) -> Files:
    from sweep.dev.reference import generate

    for name, text in generate().items():
        files.append(File.generated(config, f"reference/{name}", content=text + "\n"))
    return files
