"""Build hook (``[tool.setuptools.cmdclass]`` in pyproject.toml): ships the corpus inside the wheel.

The corpus lives at the top of the repository (``corpus/``), outside any package, so setuptools would
leave it out of a wheel; ``build_py`` copies it to ``kb/bundled_corpus/``, where
:func:`kb.corpus_files.default_corpus_dir` finds it in an installed copy. An editable install reads
``corpus/`` in place. Only the build imports this module.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools.command.build_py import build_py


class BuildWithCorpus(build_py):
    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent.parent / "corpus"
        target = Path(self.build_lib) / "kb" / "bundled_corpus"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
