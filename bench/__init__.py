"""Benchmarks (``make bench``): scripts that print side-by-side figures, not tests.

Run them as scripts (``.venv/bin/python bench/bench_v2x.py``): ``--baseline REF`` re-runs a
script on an exported older tree (``baseline.py``), which is why the scripts set up their
own ``sys.path``. Code the tests share lives in plain modules (``scenes.py``) and is
imported as ``bench.scenes``; ``bench_parse`` is importable as ``bench.bench_parse``.
"""
